#!/usr/bin/env python3
"""Checks that each named struct in NEW.abi.xml keeps BASE.abi.xml's data
members, in order, with their names, offsets and types, only adding members
after them (the growth the library allows: rlock/config.h, "Growing without
breaking"). abi/suppressions.ini then lets abidiff pass those structs' size
changes; this check is what makes that safe, since libabigail's
has_data_member_inserted_at = end also matches a changed member.

    appended_only.py BASE.abi.xml NEW.abi.xml STRUCT...
Exit 0 when every struct only grew (or is unchanged), 1 otherwise."""
import sys
import xml.etree.ElementTree as ET


def members(path, name):
    root = ET.parse(path).getroot()
    for decl in root.iter("class-decl"):
        if decl.get("name") == name and decl.get("is-declaration-only") != "yes":
            return [(m.get("layout-offset-in-bits"), v.get("name"), v.get("type-id"))
                    for m in decl.findall("data-member") for v in m.findall("var-decl")]
    return None


def main():
    base, new, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    ok = True
    for name in names:
        old, now = members(base, name), members(new, name)
        if old is None:
            continue  # not in the baseline: nothing to keep
        if now is None or now[:len(old)] != old:
            print(f"appended_only: struct {name}: its members changed, not only grew:")
            for i, m in enumerate(old):
                got = now[i] if now is not None and i < len(now) else None
                if got != m:
                    print(f"  was {m} (offset, name, type), now {got}")
                    break  # the first difference; the rest follow from it
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
