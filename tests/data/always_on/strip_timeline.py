"""Copies a cutriage file without its timeline (TraceChunk records, Record field 7), so that a long
run's agent file is small enough to commit; every other record is kept byte for byte.

    python3 strip_timeline.py IN.pb[.gz] OUT.pb
"""
import gzip
import sys


def varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = gzip.open(src).read() if src.endswith(".gz") else open(src, "rb").read()
    out = bytearray()
    pos = dropped = 0
    while pos < len(data):
        start = pos
        key, pos = varint(data, pos)
        if key != (1 << 3 | 2):  # File.records, length-delimited
            raise SystemExit("unexpected field %d at %d" % (key, start))
        length, pos = varint(data, pos)
        body = data[pos:pos + length]
        pos += length
        record_key, _ = varint(body, 0)
        if record_key >> 3 == 7:  # Record.trace
            dropped += 1
            continue
        out += data[start:pos]
    open(dst, "wb").write(out)
    print("%s: %d bytes -> %d, %d timeline records dropped" % (dst, len(data), len(out), dropped))


if __name__ == "__main__":
    main()
