#!/usr/bin/env python3
"""What a bundle zip holds, read by Python's zipfile (or bsdtar where zipfile has no decoder), under
the installer's rules; for ZipCorpusTests. Standard library only.

  reference.py prepare IN OUT   copy IN to OUT, adding an index.html when it holds no bundle
                                prints {"added": bool, "note": str}
  reference.py batch CORPUS OUT NAME...   both, for each archive: OUT/<n>.zip, and
                                {NAME: {"zip": path, "prepared": ..., "views": ...}}
  reference.py files ZIP        prints {"zipfile": VIEW, "bsdtar": VIEW},
                                VIEW = {"ok": bool, "error": str, "files": {path: sha256}}

The rules (MiniAppCore.docc, "What a bundle zip may hold"): a name flagged UTF-8 is UTF-8; an unflagged one is an
Info-ZIP Unicode path (0x7075) when its CRC matches, else UTF-8 when valid, else CP437; names are
composed (NFC); a name with `\\` and no `/` uses `\\` as separator; empty and `.` components are dropped;
`__MACOSX/...`, `._*` files and `.DS_Store` are dropped; the bundle is the root when it holds
index.html, else its single top folder.
"""

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unicodedata
import zipfile
import zlib

INDEX = b"<!doctype html><title>corpus</title>\n"


def decode(info):
    flagged = info.flag_bits & 0x800
    raw = info.orig_filename.encode("utf-8" if flagged else "cp437")
    name = None
    if not flagged:
        extra = info.extra
        while len(extra) >= 4:
            tag, size = struct.unpack("<HH", extra[:4])
            body = extra[4:4 + size]
            if tag == 0x7075 and len(body) >= 5 and body[0] == 1 and struct.unpack("<L", body[1:5])[0] == zlib.crc32(raw):
                try:
                    name = body[5:].decode("utf-8")
                except UnicodeDecodeError:
                    pass
            extra = extra[4 + size:]
    if name is None:
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            name = raw.decode("cp437")
    name = unicodedata.normalize("NFC", name)
    if "\\" in name and "/" not in name:
        name = name.replace("\\", "/")
    return name


def components(name):
    return [part for part in name.split("/") if part not in ("", ".")]


def dropped(parts, is_dir):
    if not parts:
        return True
    if parts[0] == "__MACOSX":
        return True
    return not is_dir and (parts[-1].startswith("._") or parts[-1] == ".DS_Store")


def bundle_root(files):
    if "index.html" in files:
        return ""
    tops = {path.split("/")[0] for path in files}
    if len(tops) == 1:
        top = tops.pop()
        if top + "/index.html" in files:
            return top + "/"
    return None


def read_with_zipfile(path):
    files = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            parts = components(decode(info))
            is_dir = info.is_dir()
            if dropped(parts, is_dir) or is_dir:
                continue
            with archive.open(info) as member:
                files["/".join(parts)] = hashlib.sha256(member.read()).hexdigest()
    return files


def read_with_bsdtar(path):
    directory = tempfile.mkdtemp()
    try:
        # A passphrase given and no terminal: an encrypted entry fails at once instead of prompting.
        run = subprocess.run(["bsdtar", "--passphrase", "-", "-xf", path, "-C", directory], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        if run.returncode != 0:
            raise RuntimeError("bsdtar: " + run.stderr.decode("utf-8", "replace").strip())
        files = {}
        for folder, _, names in os.walk(directory):
            for name in names:
                full = os.path.join(folder, name)
                # bsdtar writes unflagged names' bytes as they are; JSON needs text.
                relative = os.fsencode(os.path.relpath(full, directory)).decode("utf-8", "replace")
                parts = relative.split("/")
                if dropped(parts, False):
                    continue
                with open(full, "rb") as handle:
                    files[unicodedata.normalize("NFC", relative)] = hashlib.sha256(handle.read()).hexdigest()
        return files
    finally:
        shutil.rmtree(directory)


def view(reader, path):
    try:
        files = reader(path)
    except Exception as error:
        return {"ok": False, "error": f"{type(error).__name__}: {error}", "files": {}}
    root = bundle_root(files)
    if root is None:
        return {"ok": False, "error": "no bundle", "files": {}}
    return {"ok": True, "error": "", "files": {name[len(root):]: digest for name, digest in files.items()}}


def files_command(path):
    return {"zipfile": view(read_with_zipfile, path), "bsdtar": view(read_with_bsdtar, path)}


def append_index(source, target):
    """Adds index.html after the last entry and keeps every other byte of the central directory as it
    is (zipfile's append mode rewrites the names it could not encode the way they were)."""
    with open(source, "rb") as handle:
        data = handle.read()
    with open(source, "rb") as handle:
        end = zipfile._EndRecData(handle)
    with zipfile.ZipFile(source) as archive:
        start = archive.start_dir
    size, offset, comment = end[zipfile._ECD_SIZE], end[zipfile._ECD_OFFSET], end[zipfile._ECD_COMMENT]
    count = end[zipfile._ECD_ENTRIES_TOTAL]
    if count >= 0xFFFF or size >= 0xFFFFFFFF or offset >= 0xFFFFFFFF or data.rfind(b"PK\x06\x07") != -1:
        raise ValueError("zip64")
    concat = start - offset
    directory = data[start:start + size]
    name = b"index.html"
    crc = zlib.crc32(INDEX)
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0x21, crc, len(INDEX), len(INDEX), len(name), 0) + name + INDEX
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 0x0314, 20, 0, 0, 0, 0x21, crc, len(INDEX), len(INDEX), len(name), 0, 0, 0, 0, 0o100644 << 16, start - concat) + name
    new_directory = directory + central
    record = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count + 1, count + 1, len(new_directory), start + len(local) - concat, len(comment)) + comment
    with open(target, "wb") as handle:
        handle.write(data[:start] + local + new_directory + record)


def prepare_command(source, target):
    shutil.copyfile(source, target)
    try:
        with zipfile.ZipFile(target) as archive:
            names = [components(decode(info)) for info in archive.infolist() if not info.is_dir()]
        files = {"/".join(parts): "" for parts in names if not dropped(parts, False)}
        if bundle_root(files) is not None:
            return {"added": False, "note": "holds a bundle"}
        try:
            append_index(source, target)
        except ValueError:
            with zipfile.ZipFile(target, "a") as archive:  # zip64: ASCII names only in this corpus
                archive.writestr("index.html", INDEX)
        return {"added": True, "note": ""}
    except Exception as error:
        shutil.copyfile(source, target)
        return {"added": False, "note": f"{type(error).__name__}: {error}"}


def batch_command(corpus, output, names):
    """prepare and files for every archive named: OUTPUT/<n>.zip, and one JSON object by name."""
    result = {}
    for index, name in enumerate(names):
        target = os.path.join(output, f"{index}.zip")
        prepared = prepare_command(os.path.join(corpus, name), target)
        result[name] = {"zip": target, "prepared": prepared, "views": files_command(target)}
    return result


if __name__ == "__main__":
    if sys.argv[1] == "batch":
        print(json.dumps(batch_command(sys.argv[2], sys.argv[3], sys.argv[4:])))
    elif sys.argv[1] == "prepare":
        print(json.dumps(prepare_command(sys.argv[2], sys.argv[3])))
    else:
        print(json.dumps(files_command(sys.argv[2])))
