#!/usr/bin/env bash
# Installs what linfer needs from Debian's packages (bookworm). Safe to run again: it only calls
# apt-get when something is missing. Needs root (or sudo).
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libxnnpack-dev libpthreadpool-dev libflatbuffers-dev flatbuffers-compiler libhwy-dev
  nlohmann-json3-dev doctest-dev
  python3-torch python3-numpy libopenblas0-pthread
  clang libclang-rt-14-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: everything is installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq || true  # a mirror in sync may fail one index; the install says if it matters
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
