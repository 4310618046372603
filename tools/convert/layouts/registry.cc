// SPDX-License-Identifier: Apache-2.0
// The converter's layouts, one file each beside this one. Order matters to detect_layout: the
// decisive layouts first (their keys overlap the others'), then ties go to the earlier one.
#include "layout.h"

namespace linfer::convert {

extern const Layout kPerformerLayout, kReformerLayout, kLongformerLayout, kBigBirdLayout, kLinferLayout,
    kLucidrainsLayout, kFairseqLayout, kTatp22Layout, kBertLayout;

const std::vector<const Layout*>& registered_layouts() {
  static const std::vector<const Layout*> layouts = {&kPerformerLayout, &kReformerLayout, &kLongformerLayout,
                                                     &kBigBirdLayout,   &kLinferLayout,   &kLucidrainsLayout,
                                                     &kFairseqLayout,   &kTatp22Layout,   &kBertLayout};
  return layouts;
}

}  // namespace linfer::convert
