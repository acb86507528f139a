#!/usr/bin/env python3
"""Package.swift lists exactly what each target imports (docs/ARCHITECTURE.md: "Package.swift is the authority").

Reads `swift package dump-package` on stdin and the targets' sources; fails, naming the target and the modules,
when a target imports a module it does not declare (it compiles only because another dependency brings it in)
or declares one it never imports. Platform and toolchain modules are not declared and not checked."""
import glob
import json
import re
import sys

TOOLCHAIN = {"Foundation", "FoundationEssentials", "Glibc", "Musl", "Darwin", "Dispatch", "Testing", "XCTest",
             "Synchronization", "_Concurrency", "os"}
IMPORT = re.compile(r"^\s*(?:@testable\s+|@_implementationOnly\s+|(?:public|package|internal)\s+)?import\s+"
                    r"(?:(?:struct|class|enum|protocol|func|typealias|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)")

package = json.load(sys.stdin)
problems = []
for target in package["targets"]:
    if target["type"] == "system":
        continue
    declared = set()
    for dependency in target.get("dependencies", []):
        for value in dependency.values():
            declared.add(value[0] if isinstance(value, list) else value)
    root = target.get("path") or ("Tests/" if target["type"] == "test" else "Sources/") + target["name"]
    imported = set()
    for path in glob.glob(root + "/**/*.swift", recursive=True):
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = IMPORT.match(line)
                if m:
                    imported.add(m.group(1))
    imported -= TOOLCHAIN
    if imported - declared:
        problems.append(f"{target['name']} imports {sorted(imported - declared)} without declaring them")
    if declared - imported:
        problems.append(f"{target['name']} declares {sorted(declared - imported)} and never imports them")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
