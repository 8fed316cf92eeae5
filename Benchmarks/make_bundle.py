#!/usr/bin/env python3
"""Writes a realistic mini-app bundle folder: about 1,000 files in a few hundred folders, text and
binary mixed, about 35 MB unpacked and 25 MB zipped. Deterministic for a given seed."""
import json
import os
import random
import sys

def main(root, files=1000, folders=300, seed=7):
    rng = random.Random(seed)
    dirs = [""]
    for index in range(folders):
        parent = rng.choice(dirs)
        dirs.append(os.path.join(parent, f"d{index:03d}"))
    words = ["const", "function", "return", "miniapp", "bridge", "permission", "render", "state",
             "props", "value", "import", "export", "await", "async", "module", "style", "color"]
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as handle:
        handle.write("<!doctype html><html><head><meta charset=utf-8><title>bench</title></head>"
                     "<body><script src=d000/app.js></script></body></html>\n")
    with open(os.path.join(root, "manifest.json"), "w") as handle:
        json.dump({"reqPermissions": [{"name": "rakuten.miniapp.user.USER_NAME", "reason": "bench"}],
                   "customMetaData": {"kind": "benchmark"}}, handle)
    for index in range(files - 2):
        folder = os.path.join(root, rng.choice(dirs))
        os.makedirs(folder, exist_ok=True)
        if index % 3 == 0:
            # Binary assets (images, fonts): incompressible, 50 to 95 KB.
            path = os.path.join(folder, f"asset{index:04d}.png")
            with open(path, "wb") as handle:
                handle.write(rng.randbytes(rng.randint(45_000, 80_000)))
        else:
            # Source text: compresses about 4:1, 10 to 30 KB.
            path = os.path.join(folder, f"module{index:04d}.js")
            size = rng.randint(10_000, 30_000)
            parts = []
            total = 0
            while total < size:
                word = rng.choice(words) + str(rng.randint(0, 9999))
                parts.append(word)
                total += len(word) + 1
            with open(path, "w") as handle:
                handle.write(" ".join(parts) + "\n")

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000, folders=30 if len(sys.argv) > 2 else 300)
