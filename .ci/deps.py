#!/usr/bin/env python3
"""The source half of .ci/deps.sh: which room of the project may use which (docs/layout.md).

Every C++ file of a room (base/, triage/, collectors/, agent/, proto/wire/, tools/) is read for its
#include lines, and every CMakeLists.txt of a room for its target_link_libraries calls and for
paths into another room's directory (a source compiled from there, an include directory). Each
is an edge "room -> room"; a forbidden one is printed with its file and line, and the exit status
is 1. tests/, examples/ and bench/ may use anything.

usage: deps.py SOURCE_DIR
"""

import os
import re
import sys

# room -> its directory under the source tree. proto/wire/ (the protozero writer the agent links)
# and the rest of proto/ (libprotobuf classes, for the tool and the tests) are two rooms.
ROOMS = {
    "base": "base",
    "triage": "triage",
    "collectors": "collectors",
    "agent": "agent",
    "wire": "proto/wire",
    "proto": "proto",
    "tools": "tools",
}
PROJECT = set(ROOMS)

# Libraries from outside, by the headers that name them.
EXTERNAL_HEADERS = [
    (re.compile(r"^(cuda|cupti|nvperf|nvPerf|cuda_runtime|driver_types|nvtx3/|cuda/)"), "CUDA"),
    (re.compile(r"^google/protobuf/"), "libprotobuf"),
    (re.compile(r"^protozero/"), "protozero"),
    (re.compile(r"^(spdlog|fmt)/"), "spdlog/fmt"),
    (re.compile(r"^zlib\.h$"), "zlib"),
    (re.compile(r"^CLI/"), "CLI11"),
]
EXTERNAL_TARGETS = [
    (re.compile(r"^CUDA::"), "CUDA"),
    (re.compile(r"^protobuf::"), "libprotobuf"),
    (re.compile(r"^(spdlog|fmt)::"), "spdlog/fmt"),
    (re.compile(r"^ZLIB::"), "zlib"),
    (re.compile(r"^CLI11::"), "CLI11"),
]

# room -> the rooms (and outside libraries) it must not use. "libprotobuf" is also what a header
# protoc generated (*.pb.h) and a target that links libprotobuf stand for. CLI11, the command
# line parser, is the tool's alone (tools/src/cli.h wraps it): every other room forbids it.
FORBIDDEN = {
    # Standard library only (the demangler's <cxxabi.h> is part of it).
    "base": (PROJECT - {"base"}) | {"CUDA", "libprotobuf", "protozero", "spdlog/fmt", "zlib", "CLI11"},
    # Standard library and base: no CUDA, no protobuf, no I/O libraries.
    "triage": {"collectors", "agent", "wire", "proto", "tools",
               "CUDA", "libprotobuf", "protozero", "spdlog/fmt", "zlib", "CLI11"},
    "collectors": {"triage", "agent", "tools", "libprotobuf", "CLI11"},
    # The injected agent never links libprotobuf (its wire writer is protozero) nor the tool.
    "agent": {"tools", "libprotobuf", "CLI11"},
    "wire": {"collectors", "agent", "tools", "libprotobuf", "CLI11"},
    "proto": {"CLI11"},
}

# Where a quoted include is looked for, after the including file's own directory: each room's
# include directories (what its CMakeLists.txt exports or uses).
INCLUDE_ROOTS = {
    "base": ["base/include", "base/src"],
    "triage": ["triage/include", "triage/src"],
    "collectors": ["collectors/include", "collectors/src"],
    "agent": ["agent/include", "agent/src"],
    "wire": ["proto/wire/include", "proto/wire/src"],
    "tools": ["tools/src"],
}
# "cutriage/<this>/..." names a room whatever the include path.
NAMESPACE_ROOMS = {"base": "base", "triage": "triage", "collectors": "collectors", "wire": "wire",
                   "v1": "proto", "cutriage.h": "agent"}

CXX_SUFFIXES = (".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".cu", ".cuh", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def room_of_path(rel):
    """The room a path (relative to the source dir, '/'-separated) lies in, or None."""
    best = None
    for room, d in ROOMS.items():
        if rel == d or rel.startswith(d + "/"):
            if best is None or len(d) > len(ROOMS[best]):
                best = room
    return best


def include_target(src, includer_rel, kind, name):
    """The room (or outside library) an #include names, or None (standard library, unknown)."""
    if name.endswith(".pb.h"):
        return "libprotobuf"
    parts = name.split("/")
    if parts[0] == "cutriage" and len(parts) >= 2 and parts[1] in NAMESPACE_ROOMS:
        return NAMESPACE_ROOMS[parts[1]]
    if kind == "<":
        for pattern, lib in EXTERNAL_HEADERS:
            if pattern.search(name):
                return lib
        return None
    own = room_of_path(includer_rel)
    local = os.path.normpath(os.path.join(os.path.dirname(includer_rel), name))
    if os.path.isfile(os.path.join(src, local)):
        return room_of_path(local.replace(os.sep, "/"))
    # The including room's own directories first, then the others'.
    order = [own] + [r for r in INCLUDE_ROOTS if r != own]
    for room in order:
        for root in INCLUDE_ROOTS.get(room, []):
            if os.path.isfile(os.path.join(src, root, name)):
                return room
    for pattern, lib in EXTERNAL_HEADERS:
        if pattern.search(name):
            return lib
    return None  # generated (protoc output) or from outside: not an edge of the project


def cxx_files(src, room_dir):
    for dirpath, dirnames, filenames in os.walk(os.path.join(src, room_dir)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith(CXX_SUFFIXES):
                yield os.path.relpath(os.path.join(dirpath, f), src).replace(os.sep, "/")


def check_includes(src, problems):
    seen = set()
    for room in FORBIDDEN:
        for rel in cxx_files(src, ROOMS[room]):
            if rel in seen:
                continue
            seen.add(rel)
            file_room = room_of_path(rel)  # proto/wire files are "wire", not "proto"
            if file_room not in FORBIDDEN:
                continue
            with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    target = include_target(src, rel, m.group(1), m.group(2))
                    if target and target != file_room and target in FORBIDDEN[file_room]:
                        problems.append(f"{rel}:{lineno}: {file_room} -> {target}: {line.strip()}")


def cmake_calls(text, command):
    """(line, [arguments]) of every call of `command`, comments removed."""
    code = "\n".join(re.sub(r"(^|\s)#.*$", r"\1", line) for line in text.split("\n"))
    for m in re.finditer(r"\b" + command + r"\s*\(", code, re.IGNORECASE):
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        yield code.count("\n", 0, m.start()) + 1, code[m.end():i - 1].split()


def cmake_files(src):
    for d in ROOMS.values():
        path = os.path.join(src, d, "CMakeLists.txt")
        if os.path.isfile(path):
            yield d + "/CMakeLists.txt"


def target_rooms(src):
    """Project target (and alias) -> room, and alias -> target, from add_library/add_executable."""
    rooms = {}
    aliases = []
    for rel in cmake_files(src):
        base_dir = os.path.dirname(rel)
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            text = f.read()
        for command in ("add_library", "add_executable"):
            for _, args in cmake_calls(text, command):
                if not args:
                    continue
                if len(args) >= 3 and args[1] == "ALIAS":
                    aliases.append((args[0], args[2]))
                    continue
                sources = [a for a in args[1:] if a.endswith(CXX_SUFFIXES) and "$" not in a]
                room = room_of_path(base_dir)
                if sources:
                    room = room_of_path(os.path.normpath(os.path.join(base_dir, sources[0])))
                rooms[args[0]] = room or room_of_path(base_dir)
    for alias, target in aliases:
        if target in rooms:
            rooms[alias] = rooms[target]
    return rooms, dict(aliases)


LINK_KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE", "LINK_PUBLIC", "LINK_PRIVATE",
                 "LINK_INTERFACE_LIBRARIES", "debug", "optimized", "general"}
PATH_RE = re.compile(r"\$\{(?:PROJECT_SOURCE_DIR|CMAKE_SOURCE_DIR|cutriage_SOURCE_DIR)\}/([A-Za-z0-9_./-]+)")


def check_cmake(src, problems):
    rooms, aliases = target_rooms(src)
    links = {}  # target -> [(item, file, line)]
    texts = {}
    for rel in cmake_files(src):
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            texts[rel] = f.read()
        for line, args in cmake_calls(texts[rel], "target_link_libraries"):
            for item in args[1:]:
                if item not in LINK_KEYWORDS:
                    name = re.sub(r"^\$<[A-Z_]+:", "", item).rstrip(">")
                    links.setdefault(aliases.get(args[0], args[0]), []).append((name, rel, line))

    def node(name):  # the room or outside library a link item stands for
        if name in rooms:
            return rooms[name]
        return next((lib for p, lib in EXTERNAL_TARGETS if p.search(name)), None)

    reach_memo = {}

    def reach(name, stack=()):  # {room or library: the chain of targets that leads there}
        if name in reach_memo:
            return reach_memo[name]
        out = {}
        here = node(name)
        if here:
            out[here] = [name]
        if name not in stack:
            for item, _, _ in links.get(aliases.get(name, name), []):
                for what, chain in reach(item, stack + (name,)).items():
                    out.setdefault(what, [name] + chain)
        reach_memo[name] = out
        return out

    for target, items in links.items():
        owner = rooms.get(target)
        if owner not in FORBIDDEN:
            continue
        for item, rel, line in items:
            if node(item) == owner:
                continue  # a target of the same room: its own links are checked where it is
            for what, chain in sorted(reach(item).items()):
                if what != owner and what in FORBIDDEN[owner]:
                    via = f", through {' -> '.join(chain)}" if len(chain) > 1 else ""
                    problems.append(f"{rel}:{line}: {owner} -> {what}: "
                                    f"target_link_libraries({target} ... {item}){via}")
    # A source compiled from, or an include directory in, another room's directory.
    for rel, text in texts.items():
        dir_room = room_of_path(os.path.dirname(rel))
        if dir_room not in FORBIDDEN:
            continue
        for lineno, text_line in enumerate(text.split("\n"), 1):
            code = re.sub(r"(^|\s)#.*$", r"\1", text_line)
            for m in PATH_RE.finditer(code):
                target = room_of_path(m.group(1).rstrip("/"))
                if target and target != dir_room and target in FORBIDDEN[dir_room]:
                    problems.append(f"{rel}:{lineno}: {dir_room} -> {target}: {code.strip()}")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n")[-1], file=sys.stderr)
        return 2
    src = sys.argv[1]
    problems = []
    check_includes(src, problems)
    check_cmake(src, problems)
    for p in problems:
        print(f"deps: forbidden edge: {p}")
    if problems:
        print(f"deps: {len(problems)} forbidden edge(s); the rules are FORBIDDEN in .ci/deps.py")
        return 1
    print("deps: sources: no forbidden include or link edge")
    return 0


if __name__ == "__main__":
    sys.exit(main())
