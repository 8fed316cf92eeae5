#!/usr/bin/env python3
"""Writes a registry directory listing N apps (app.json and version.json only: enough for the list
endpoint), to time `list --json` on a large catalog."""
import json
import os
import sys

def main(root, count=10_000):
    os.makedirs(os.path.join(root, "apps"), exist_ok=True)
    with open(os.path.join(root, "registry.json"), "w") as handle:
        json.dump({"format": 1}, handle)
    for index in range(count):
        app_id = f"app-{index:05d}"
        version = os.path.join(root, "apps", app_id, "versions", "v1")
        os.makedirs(version, exist_ok=True)
        with open(os.path.join(root, "apps", app_id, "app.json"), "w") as handle:
            json.dump({"id": app_id, "displayName": f"App number {index}", "icon": f"https://cdn.example/{app_id}.png",
                       "promotionalText": "A mini-app of the benchmark catalog."}, handle)
        with open(os.path.join(version, "version.json"), "w") as handle:
            json.dump({"versionId": "v1", "versionTag": "1.0.0", "preview": False, "publishedAt": "2026-01-01T00:00:00.000Z",
                       "publicKeyId": "k", "signature": "MEUCIQ==", "sha256": "0" * 64, "sizeBytes": 1}, handle)

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10_000)
