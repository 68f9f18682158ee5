#!/usr/bin/env python3
"""Finds colours in a PNG screenshot, with the standard library only (zlib).

    pngscan.py SHOT.png AREA_RGB COLOUR_RGB...

AREA_RGB (hex, "f4f6f9") is the fill of a region, such as a plot's
background: its bounding box is where the colours are looked for. Prints
JSON: {"area": [x0, y0, x1, y1] or null, "colours": {hex: {"pixels": N,
"x0": .., "x1": .., "y0": .., "y1": ..}}}, counting pixels within 12 of each
channel of a colour (anti-aliasing blends a line's edges, not its middle).
Reads 8-bit RGB and RGBA, non-interlaced, as Chromium writes them.
"""
import json
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in (2, 6) or interlace:
        raise SystemExit(f"{path}: depth {depth}, colour type {colour_type}, interlace {interlace}: not read here")
    bpp = 3 if colour_type == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        row = bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:  # Sub
            for i in range(bpp, stride):
                row[i] = (row[i] + row[i - bpp]) & 0xFF
        elif kind == 2:  # Up
            row = bytearray((a + b) & 0xFF for a, b in zip(row, prev))
        elif kind == 3:  # Average
            for i in range(stride):
                left = row[i - bpp] if i >= bpp else 0
                row[i] = (row[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = row[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(row)
        prev = row
    return width, height, bpp, rows


def rgb(text):
    return tuple(int(text[i:i + 2], 16) for i in (0, 2, 4))


def main():
    path, area_hex, colour_hexes = sys.argv[1], sys.argv[2], sys.argv[3:]
    width, height, bpp, rows = read_png(path)
    area = rgb(area_hex)
    box = None
    for y, row in enumerate(rows):
        xs = [x for x in range(width) if tuple(row[x * bpp:x * bpp + 3]) == area]
        if xs:
            box = [min(xs), y, max(xs), y] if box is None else [min(box[0], xs[0]), box[1], max(box[2], xs[-1]), y]
    found = {}
    for hexa in colour_hexes:
        want = rgb(hexa)
        stats = {"pixels": 0, "x0": None, "x1": None, "y0": None, "y1": None}
        if box:
            for y in range(box[1], box[3] + 1):
                row = rows[y]
                for x in range(box[0], box[2] + 1):
                    i = x * bpp
                    if abs(row[i] - want[0]) <= 12 and abs(row[i + 1] - want[1]) <= 12 and abs(row[i + 2] - want[2]) <= 12:
                        stats["pixels"] += 1
                        stats["x0"] = x if stats["x0"] is None else min(stats["x0"], x)
                        stats["x1"] = x if stats["x1"] is None else max(stats["x1"], x)
                        stats["y0"] = y if stats["y0"] is None else stats["y0"]
                        stats["y1"] = y
        found[hexa] = stats
    print(json.dumps({"size": [width, height], "area": box, "colours": found}))


if __name__ == "__main__":
    main()
