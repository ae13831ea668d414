#!/usr/bin/env python3
"""Reads a split packed by `vtrain pack` with Python's tarfile and the
webdataset library, and checks it against the source image folder.

    check_packed_shards.py SHARDS_SPLIT_DIR [IMAGE_FOLDER]

IMAGE_FOLDER defaults to the manifest's "source". Checks, for every shard:
  - tarfile reads it as a POSIX ustar archive; members come in pairs
    <key>.<ext>, <key>.cls with a 9-digit key and no dots in it;
  - webdataset.WebDataset yields the same samples (keys, image bytes, labels);
  - the labels are torchvision ImageFolder's: classes = sorted sub-folders,
    samples listed as sorted(os.walk(...)) with its extensions, and the key
    is the position in that listing;
  - an image stored byte for byte equals the source file; a re-encoded one
    is a JPEG whose longer side is max_side and shorter side
    floor(short * max_side / long) of the source (PIL's size).
Prints a summary; exit 1 on the first mismatch. Needs webdataset and Pillow
(pip install webdataset pillow).
"""
import io
import json
import os
import sys
import tarfile

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def image_folder(root):
    """torchvision.datasets.ImageFolder's (classes, [(path, label)])."""
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    samples = []
    for label, c in enumerate(classes):
        for d, _, files in sorted(os.walk(os.path.join(root, c), followlinks=True)):
            for f in sorted(files):
                if f.lower().endswith(IMG_EXTENSIONS):
                    samples.append((os.path.join(d, f), label))
    return classes, samples


def fail(msg):
    print("MISMATCH: " + msg)
    sys.exit(1)


def main(argv):
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) < 2 or len(argv) > 3 or argv[1].startswith("-"):
        sys.stderr.write(__doc__)
        return 2
    split = argv[1]
    manifest_path = os.path.join(split, "manifest.json")
    if not os.path.isfile(manifest_path):
        sys.stderr.write("check_packed_shards.py: %s not found: '%s' is not a split written by `vtrain pack` "
                         "(OUT/<split folder>/)\n" % (manifest_path, split))
        return 2
    manifest = json.load(open(manifest_path))
    source = argv[2] if len(argv) > 2 else manifest["source"]
    classes, samples = image_folder(source)
    if classes != manifest["classes"]:
        fail("classes differ from the folder's sorted sub-folders")
    from PIL import Image
    import webdataset as wds

    urls = [os.path.join(split, "shard-%06d.tar" % k) for k in range(manifest["shards"])]
    from_tar = []
    for url in urls:
        with tarfile.open(url, mode="r:") as t:
            members = t.getmembers()
            if len(members) % 2:
                fail("%s: odd member count" % url)
            for img, cls in zip(members[0::2], members[1::2]):
                key, ext = img.name.split(".")
                if len(key) != 9 or not key.isdigit() or cls.name != key + ".cls":
                    fail("%s: members %s, %s" % (url, img.name, cls.name))
                from_tar.append((key, ext, t.extractfile(img).read(), int(t.extractfile(cls).read())))
    from_wds = [(s["__key__"], s) for s in wds.WebDataset(urls, shardshuffle=False)]
    if len(from_wds) != len(from_tar):
        fail("webdataset yields %d samples, tarfile %d" % (len(from_wds), len(from_tar)))
    max_side, reencoded, stored = manifest["max_side"], 0, 0
    for (key, ext, data, label), (wkey, ws) in zip(from_tar, from_wds):
        if wkey != key or ws[ext] != data or int(ws["cls"]) != label:
            fail("webdataset and tarfile differ at key %s" % key)
        path, want = samples[int(key)]
        if label != want:
            fail("key %s (%s): label %d, ImageFolder's %d" % (key, path, label, want))
        src = open(path, "rb").read()
        if data == src:
            stored += 1
            continue
        w, h = Image.open(io.BytesIO(src)).size
        out = Image.open(io.BytesIO(data))
        longer = max(w, h)
        size = (max_side if w == longer else w * max_side // longer, max_side if h == longer else h * max_side // longer)
        if not (max_side and longer > max_side and out.format == "JPEG" and out.size == size):
            fail("key %s (%s): %dx%d stored as %s %s, expected byte for byte or a JPEG of %s" %
                 (key, path, w, h, out.format, out.size, size))
        reencoded += 1
    print("%s: %d shards, %d samples (tarfile == webdataset), labels = ImageFolder's, %d stored byte for byte, "
          "%d re-encoded to max_side %d, %d of %d folder images left out" %
          (split, len(urls), len(from_tar), stored, reencoded, max_side, len(samples) - len(from_tar), len(samples)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
