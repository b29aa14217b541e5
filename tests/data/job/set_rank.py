#!/usr/bin/env python3
"""Writes a copy of a cutriage file whose session header names a rank of a job (SessionHeader.job,
field 17: a JobPlace), every other byte as it was. For test fixtures only: it labels real captures
as ranks of a job that did not run as one (README.md here says which files are made so).

usage: set_rank.py IN.pb OUT.pb --rank R [--world-size W] [--local-rank L] [--variable NAME]

The file is a cutriage.v1.File written record by record: each record is field 1 (length-
delimited) of File, and the first one holds Record.session (field 1). The JobPlace is appended
to the header's bytes and the two lengths around it are written again. Pure Python: the wire
format needs no protobuf package."""
import argparse
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(data, pos):
    n = shift = 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos


def fields(data):
    """(field number, wire type, start of the field, end of the field) of each top-level field."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = read_varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 2:
            n, pos = read_varint(data, pos)
            pos += n
        elif wire == 5:
            pos += 4
        else:
            raise ValueError("unsupported wire type %d at byte %d" % (wire, start))
        yield number, wire, start, pos


def payload(data, start, end):
    _, pos = read_varint(data, start)  # key
    n, pos = read_varint(data, pos)
    assert pos + n == end
    return data[pos:end]


def length_delimited(number, body):
    return varint((number << 3) | 2) + varint(len(body)) + body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world-size", type=int, default=0)
    ap.add_argument("--local-rank", type=int)
    ap.add_argument("--variable", default="RANK")
    a = ap.parse_args()
    data = open(a.input, "rb").read()
    number, wire, start, end = next(fields(data))
    record = payload(data, start, end)
    r_number, _, r_start, r_end = next(fields(record))
    if number != 1 or wire != 2 or r_number != 1 or r_end != len(record):
        sys.exit("%s: the first record is not a session header" % a.input)
    header = payload(record, r_start, r_end)
    if any(n == 17 for n, _, _, _ in fields(header)):
        sys.exit("%s: the session header already names a job place" % a.input)
    job = b""
    if a.rank:
        job += varint(1 << 3) + varint(a.rank)
    if a.world_size:
        job += varint(2 << 3) + varint(a.world_size)
    if a.local_rank is not None:
        if a.local_rank:
            job += varint(3 << 3) + varint(a.local_rank)
        job += varint(4 << 3) + varint(1)
    job += length_delimited(5, a.variable.encode())
    header += length_delimited(17, job)
    out = length_delimited(1, length_delimited(1, header)) + data[end:]
    open(a.output, "wb").write(out)


if __name__ == "__main__":
    main()
