# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause

from .nlspec import SpecAttr, SpecAttrSet, SpecEnumEntry, SpecEnumSet, \
    SpecFamily, SpecOperation
from .ynl import YnlFamily, Netlink, NlError

__all__ = ["SpecAttr", "SpecAttrSet", "SpecEnumEntry", "SpecEnumSet",
           "SpecFamily", "SpecOperation", "YnlFamily", "Netlink", "NlError"]
