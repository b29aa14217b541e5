#!/usr/bin/env python3
"""`cutriage report --html` rendered by a real browser: headless Chromium (Debian's `chromium`)
loads the page from a file:// URL with no network, its DOM after rendering must hold the report's
content (kernel sections, verdicts, the SVG charts), and a screenshot of it must be a 1280x2000
PNG that is not blank. Exits 77 (skipped) when Chromium is not installed.

usage: test_html_chromium.py CUTRIAGE_BINARY DATA_DIR
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
WIDTH, HEIGHT = 1280, 2000


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_args(browser, profile):
    # --no-sandbox: CI and containers run as root; the page is ours and loads nothing.
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", "--disable-background-networking", "--user-data-dir=" + profile]


def decode_png(data):
    """(width, height, rows of RGB(A) bytes) of an 8-bit non-interlaced PNG, with zlib only."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or interlace != 0 or color not in (2, 6):
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {color}, interlace {interlace}")
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        kind = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if kind == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif kind == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 255
        elif kind == 3:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((a + prev[x]) >> 1)) & 255
        elif kind == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    cutriage, data = sys.argv[1], sys.argv[2]
    browser = find_chromium()
    if browser is None:
        print("chromium not found (Debian: apt-get install chromium): skipped")
        return SKIP
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
        return cond

    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "torch_loop.html")
        capture = os.path.join(data, "agent-split", "torch_loop.pb")
        r = subprocess.run([cutriage, "report", capture, "--html", page], capture_output=True)
        if not check(r.returncode == 0, f"cutriage report --html: exit {r.returncode}: {r.stderr.decode()[:300]}"):
            print("\n".join(failures))
            return 1
        text = subprocess.run([cutriage, "report", capture], capture_output=True).stdout.decode()
        kernels = int(re.search(r"^(\d+) profiled kernels?, longest first$", text, re.M).group(1))
        url = "file://" + page

        dom = subprocess.run(chromium_args(browser, os.path.join(tmp, "p1")) + ["--dump-dom", url],
                             capture_output=True, timeout=120)
        check(dom.returncode == 0, f"chromium --dump-dom: exit {dom.returncode}: {dom.stderr.decode()[-300:]}")
        html = dom.stdout.decode("utf-8", "replace")
        sections = html.count('<article class="kernel"')
        check(sections == kernels, f"the rendered DOM has {sections} kernel sections, expected {kernels}")
        for needle in ("Kernel families by GPU time", "Timeline", "Profiled kernels, longest first",
                       '<svg class="roofline"', '<svg class="timeline"', 'class="roof-point', 'class="roof fp32"',
                       '<span class="badge">COMPUTE BOUND</span>', "NVIDIA H200",
                       "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8"):
            check(needle in html, f"the rendered DOM lacks {needle!r}")
        # Kernel names arrive as text: the browser re-escapes them the same way.
        check("cutlass::Kernel2&lt;cutlass_80_simt_sgemm_128x256_8x4_nt_align1&gt;" in html,
              "a template kernel name is not text in the DOM")

        shot = os.path.join(tmp, "shot.png")
        s = subprocess.run(chromium_args(browser, os.path.join(tmp, "p2")) +
                           [f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars", url],
                           capture_output=True, timeout=120)
        check(s.returncode == 0, f"chromium --screenshot: exit {s.returncode}: {s.stderr.decode()[-300:]}")
        if check(os.path.exists(shot), "no screenshot written"):
            width, height, bpp, rows = decode_png(open(shot, "rb").read())
            check((width, height) == (WIDTH, HEIGHT), f"screenshot is {width}x{height}, expected {WIDTH}x{HEIGHT}")
            # Not blank: a rendered report has text, table rules and bars: thousands of pixels
            # that are not the white background, in several colours.
            inked, colours = 0, set()
            for row in rows:
                for x in range(0, len(row), bpp):
                    r_, g, b = row[x], row[x + 1], row[x + 2]
                    if r_ < 235 or g < 235 or b < 235:
                        inked += 1
                        colours.add((r_ >> 4, g >> 4, b >> 4))
            share = inked / float(width * height)
            check(share > 0.01, f"the screenshot is almost blank: {share:.4%} of its pixels are inked")
            check(len(colours) > 8, f"the screenshot has {len(colours)} colours: not a rendered report")
            print(f"screenshot {width}x{height}: {share:.2%} inked, {len(colours)} colours")

    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
