"""Rebuild the bundled Shakespeare corpus (developer tool, not used at run time).

``python -m oscsim.data._build /path/to/shared/data/shakespeare`` writes ``shakespeare.txt.gz`` and
``shakespeare.json`` next to this file. The texts are the Project Gutenberg etexts listed in the source
folder's ``metadata.json`` (public domain); each is stored byte for byte, joined in sorted file-name order
with one blank line between works, and the JSON records each work's byte range, its split and a SHA-256 of
the whole so that a damaged copy is refused at load time.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

#: Fixed split by whole works (about 5 % of the bytes each for validation and test).
VALID_WORKS = ("julius_caesar_gut.txt", "macbeth_gut.txt")
TEST_WORKS = ("tempest_gut.txt", "twelfth_night_gut.txt")
SEPARATOR = b"\n\n"


def build(src: Path, dst: Path) -> dict:
    meta = json.loads((src / "metadata.json").read_text())
    names = sorted(p.name for p in src.glob("*.txt"))
    parts: list[bytes] = []
    works = []
    offset = 0
    for name in names:
        text = (src / name).read_bytes().strip(b"\n") + SEPARATOR
        split = "valid" if name in VALID_WORKS else "test" if name in TEST_WORKS else "train"
        works.append({"file": name, "title": meta.get(name, {}).get("title", name),
                      "source": meta.get(name, {}).get("source", ""), "split": split,
                      "start": offset, "stop": offset + len(text)})
        parts.append(text)
        offset += len(text)
    blob = b"".join(parts)
    index = {"name": "shakespeare", "encoding": "ascii", "n_bytes": len(blob),
             "sha256": hashlib.sha256(blob).hexdigest(), "works": works,
             "license": "public domain (Project Gutenberg etexts)"}
    with gzip.GzipFile(dst / "shakespeare.txt.gz", "wb", compresslevel=9, mtime=0) as fh:
        fh.write(blob)
    (dst / "shakespeare.json").write_text(json.dumps(index, indent=1) + "\n")
    return index


if __name__ == "__main__":  # pragma: no cover
    idx = build(Path(sys.argv[1]), Path(__file__).parent)
    print(idx["n_bytes"], "bytes")
