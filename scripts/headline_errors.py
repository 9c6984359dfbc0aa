#!/usr/bin/env python3
"""Cuts each `error` in a bench JSON (`cudal1 bench --json`: {"rows": [...]}) or an enrich.jsonl
(one object a line) to its first line, in place.

An evaluation's error can quote the code it judged: a traceback's source lines, a compiler's
message around the offending line. The first line says what failed ("case 0 (normal inputs):
RuntimeError: ...", "loading the candidate: ... defines no `ModelNew`"), which is all a carried
verdict (`--rows-from`, `--lines-from`) and a report's reason need; the whole error stays in the
store that measured it. Used before a file of verdicts on someone else's kernels is committed.
"""
import json
import os
import sys
import tempfile


def headline(row):
    """True when the row's error was cut."""
    error = row.get("error") if isinstance(row, dict) else None
    if not isinstance(error, str) or "\n" not in error:
        return False
    row["error"] = error.split("\n", 1)[0]
    return True


def rewrite(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None  # JSON lines, or broken: read line by line below
    if isinstance(whole, dict) and isinstance(whole.get("rows"), list):
        cut = sum(headline(row) for row in whole["rows"])
        out = json.dumps(whole, ensure_ascii=False)
    else:
        cut, lines = 0, []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: neither a bench JSON nor JSON lines ({e.msg}); nothing was changed") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{n}: a line that is not a JSON object; nothing was changed")
            cut += headline(obj)
            lines.append(json.dumps(obj, ensure_ascii=False))
        out = "\n".join(lines) + ("\n" if lines else "")
    # Written beside and renamed over: an interrupted run leaves the file as it was.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".headline-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(out)
    os.replace(tmp, path)
    return cut


def main(argv):
    if len(argv) < 2:
        print("usage: headline_errors.py FILE [FILE...]  (a bench JSON or an enrich.jsonl, rewritten in place)",
              file=sys.stderr)
        return 2
    for path in argv[1:]:
        try:
            cut = rewrite(path)
        except (OSError, ValueError) as e:
            print(f"headline_errors: {e}", file=sys.stderr)
            return 3
        print(f"{path}: {cut} errors cut to their first line", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
