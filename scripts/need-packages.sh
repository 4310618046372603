#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# need-packages.sh PACKAGE...: installs with apt-get those of Debian's packages that are not
# installed yet (root, or sudo). An index that fails to download while a mirror syncs does not stop
# it: the install then says whether a package was really missing. Another apt-get at work on the
# machine (a fresh machine's unattended upgrades, a second script) is waited for, not failed on.
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0
echo "need-packages: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq || true
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
