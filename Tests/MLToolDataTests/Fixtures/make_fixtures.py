#!/usr/bin/env python3
"""Writes the MLToolData test fixtures (tiny images + PIL reference resizes). Re-run on purpose only:
    python3 Tests/MLToolDataTests/Fixtures/make_fixtures.py
Needs numpy and Pillow. Every file is a few KB."""
import os, struct, zlib
import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
def out(name): return os.path.join(HERE, name)

# Four flat quadrants (red, green / blue, white) so orientation and colours can be read back after lossy coding.
QUAD = [(220, 30, 30), (30, 200, 40), (40, 50, 210), (250, 250, 250)]
def quadrants(w=48, h=32):
    a = np.zeros((h, w, 3), np.uint8)
    a[: h // 2, : w // 2] = QUAD[0]; a[: h // 2, w // 2 :] = QUAD[1]
    a[h // 2 :, : w // 2] = QUAD[2]; a[h // 2 :, w // 2 :] = QUAD[3]
    return Image.fromarray(a, "RGB")

upright = quadrants()
upright.save(out("quad.png"))
upright.save(out("quad.jpg"), quality=95, subsampling=0)
upright.save(out("progressive.jpg"), quality=95, subsampling=0, progressive=True)
upright.convert("CMYK").save(out("cmyk.jpg"), quality=95)          # Pillow writes Adobe APP14 + inverted CMYK
upright.convert("L").save(out("gray.jpg"), quality=95)
upright.convert("L").save(out("gray.png"))

# EXIF orientation n: store the pixels so that applying orientation n gives the upright image back.
T = Image.Transpose
inverse = {1: None, 2: T.FLIP_LEFT_RIGHT, 3: T.ROTATE_180, 4: T.FLIP_TOP_BOTTOM, 5: T.TRANSPOSE,
           6: T.ROTATE_90, 7: T.TRANSVERSE, 8: T.ROTATE_270}
from PIL import ImageOps
for n, op in inverse.items():
    stored = upright if op is None else upright.transpose(op)
    exif = Image.Exif(); exif[274] = n
    stored.save(out(f"orient{n}.jpg"), quality=95, subsampling=0, exif=exif.tobytes())
    back = ImageOps.exif_transpose(Image.open(out(f"orient{n}.jpg"))).convert("RGB")
    assert back.size == upright.size, (n, back.size)

# PNG with an eXIf chunk (orientation 8).
exif = Image.Exif(); exif[274] = 8
upright.transpose(inverse[8]).save(out("orient8.png"), exif=exif.tobytes())
assert ImageOps.exif_transpose(Image.open(out("orient8.png"))).size == upright.size

# PNG colour types.
rgba = np.array(upright.convert("RGBA"))
rgba[:, :, 3] = 255; rgba[: 16, : 24, 3] = 0; rgba[16:, 24:, 3] = 128   # red quadrant transparent, white half
Image.fromarray(rgba, "RGBA").save(out("rgba.png"))
upright.quantize(4).save(out("palette.png"))

def write_png(path, arr16):  # 16-bit gray (h, w) or RGB (h, w, 3) PNG, written by hand
    h, w = arr16.shape[:2]
    ctype = 2 if arr16.ndim == 3 else 0
    raw = b"".join(b"\x00" + arr16[y].astype(">u2").tobytes() for y in range(h))
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, ctype, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
rgb16 = np.array(upright).astype(np.uint16) * 257
write_png(out("rgb16.png"), rgb16)
g16 = (np.arange(48 * 32, dtype=np.uint32).reshape(32, 48) * 40).astype(np.uint16)   # 0 … 61400
write_png(out("gray16.png"), g16)

# Resampling reference: a smooth but non-trivial 61×47 image, resized by PIL (BILINEAR, reducing and enlarging).
yy, xx = np.mgrid[0:47, 0:61]
src = np.stack([(xx * 4 + yy * 2) % 256, (np.sin(xx / 5.0) * 100 + 128 + yy), (yy * 5) ^ (xx * 3)], -1)
src = np.clip(src, 0, 255).astype(np.uint8)
Image.fromarray(src, "RGB").save(out("resample_src.png"))
for (w, h) in [(23, 17), (97, 83), (30, 60), (61, 20)]:
    Image.fromarray(src, "RGB").resize((w, h), Image.BILINEAR).save(out(f"resample_{w}x{h}.png"))
# The "shorter side to 32, centre crop 28×28" pipeline, as recipes/efficientnet_lite0.py preprocesses for
# onnxruntime: the longer side is rounded to nearest, the crop offset floored.
im = Image.fromarray(src, "RGB"); W, H = im.size
scale = 32 / min(W, H)
nw, nh = round(W * scale), round(H * scale)
r = im.resize((nw, nh), Image.BILINEAR)
left, top = (nw - 28) // 2, (nh - 28) // 2
r.crop((left, top, left + 28, top + 28)).save(out("pipeline_28.png"))
Image.fromarray(src, "RGB").convert("L").resize((20, 15), Image.BILINEAR).save(out("pipeline_gray_20x15.png"))
print("fixtures written to", HERE)
