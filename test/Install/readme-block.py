"""readme-block.py README LANG [N]: prints the Nth (default: first) ```LANG
block of README's "Embedding" section (the examples the tests build and
run)."""

import re
import sys


def extract(text, lang, index=1):
    """The `index`th fenced `lang` block after the '## Embedding' heading."""
    start = text.index("\n## Embedding")
    end = text.find("\n## ", start + 1)
    blocks = re.compile(r"^```" + re.escape(lang) + r"\n(.*?)^```$",
                        re.S | re.M).findall(text, start,
                                             end if end >= 0 else len(text))
    if len(blocks) < index:
        raise SystemExit(f"no ```{lang} block number {index} in the "
                         f"Embedding section")
    return blocks[index - 1]


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(extract(f.read(), sys.argv[2],
                                 int(sys.argv[3]) if len(sys.argv) > 3
                                 else 1))
