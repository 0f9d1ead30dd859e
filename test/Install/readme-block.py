"""readme-block.py README LANG: prints the first ```LANG block of README's
"Embedding" section (the examples the tests build and run)."""

import re
import sys


def extract(text, lang):
    """The first fenced `lang` block after the '## Embedding' heading."""
    start = text.index("\n## Embedding")
    match = re.compile(r"^```" + re.escape(lang) + r"\n(.*?)^```$",
                       re.S | re.M).search(text, start)
    if not match:
        raise SystemExit(f"no ```{lang} block in the Embedding section")
    return match.group(1)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(extract(f.read(), sys.argv[2]))
