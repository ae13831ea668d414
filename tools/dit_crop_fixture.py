#!/usr/bin/env python3
"""DiT's crop of every photo in an ImageFolder, as SHA-256 digests.

For each image (sorted as torchvision's ImageFolder sorts them) this runs
what DiT's train.py and fast-DiT's extract_features.py run before ToTensor:
torchvision's default loader (PIL open + convert("RGB")) and DiT's
center_crop_arr (train.py: box-halve while the shorter side >= 2S, BICUBIC
to shorter side S with round(), crop ((H-S)//2, (W-S)//2)), which upsamples
images whose shorter side is below S. It writes one line per image:

    <class>/<file>  <width>x<height>  <PIL mode>  <sha256 of the S x S x 3 uint8 crop>

tests/diffusion/test_dit_center_crop.cpp compares vt::adm_center_crop's
bytes with these digests, so a mismatch on any size class (small images
that are upsampled, odd sizes, large images that are box-halved) fails.

Usage: tools/dit_crop_fixture.py IMAGE_FOLDER S OUT.tsv   (needs Pillow, numpy)
"""
import hashlib
import os
import sys

import numpy as np
from PIL import Image


def center_crop_arr(pil_image, image_size):
    # DiT train.py, verbatim apart from formatting.
    while min(*pil_image.size) >= 2 * image_size:
        pil_image = pil_image.resize(tuple(x // 2 for x in pil_image.size), resample=Image.BOX)
    scale = image_size / min(*pil_image.size)
    pil_image = pil_image.resize(tuple(round(x * scale) for x in pil_image.size), resample=Image.BICUBIC)
    arr = np.array(pil_image)
    crop_y = (arr.shape[0] - image_size) // 2
    crop_x = (arr.shape[1] - image_size) // 2
    return Image.fromarray(arr[crop_y: crop_y + image_size, crop_x: crop_x + image_size])


def main():
    root, size, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    lines = []
    for cls in sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))):
        for name in sorted(os.listdir(os.path.join(root, cls))):
            path = os.path.join(root, cls, name)
            with open(path, "rb") as f:
                img = Image.open(f)
                mode = img.mode
                img = img.convert("RGB")
            w, h = img.size
            arr = np.ascontiguousarray(np.array(center_crop_arr(img, size)), dtype=np.uint8)
            assert arr.shape == (size, size, 3), (path, arr.shape)
            lines.append(f"{cls}/{name}\t{w}x{h}\t{mode}\t{hashlib.sha256(arr.tobytes()).hexdigest()}\n")
    with open(out, "w") as f:
        f.write(f"# tools/dit_crop_fixture.py {os.path.basename(os.path.normpath(root))} {size}: "
                f"DiT center_crop_arr after PIL convert('RGB'), Pillow {Image.__version__}\n")
        f.writelines(lines)
    print(f"{len(lines)} images -> {out}")


if __name__ == "__main__":
    main()
