#!/usr/bin/env bash
# Regenerates the README's pictures of a report from a real run, so none is drawn by hand:
#   docs/images/report-example.png   the HTML report (`specconsole report SESSION --format html`)
#                                    rendered by Debian's headless Chromium
#   README.md                        the terminal chart of the same session, between the
#                                    `terminal-chart:begin` / `terminal-chart:end` markers
# Without SESSION it first runs the demo sweep (examples/demo-sweep.toml, headless, against the
# simulator) into a temporary folder. Chromium is started with the switches the browser test
# uses (tests/fixtures/browser.py): no network of its own, a fresh profile.
# Usage: scripts/render-report-example.sh [SESSION]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SPEC="$ROOT/.venv/bin/specconsole"
[ -x "$SPEC" ] || { echo "render-report-example: run scripts/bootstrap.sh first" >&2; exit 1; }
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || {
    echo "render-report-example: needs chromium (scripts/bootstrap.sh --system installs it)" >&2
    exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ $# -ge 1 ]; then
    session=$1
else
    echo "render-report-example: running the demo sweep (about 2-3 minutes)" >&2
    "$SPEC" sweep examples/demo-sweep.toml --headless --session "$work/sessions" >"$work/sweep.log" \
        || { tail -20 "$work/sweep.log" >&2; exit 1; }
    session=$(find "$work/sessions" -mindepth 1 -maxdepth 1 -type d | head -1)
fi

mkdir -p docs/images
"$SPEC" report "$session" --format html -o "$work/report.html" >/dev/null
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-extensions --disable-default-apps --hide-scrollbars \
    "--host-resolver-rules=MAP * ~NOTFOUND" "--user-data-dir=$work/profile" \
    "--screenshot=$ROOT/docs/images/report-example.png" --window-size=1200,2400 \
    "file://$work/report.html" >"$work/chromium.log" 2>&1 \
    || { tail -20 "$work/chromium.log" >&2; exit 1; }
[ -s docs/images/report-example.png ] || { echo "chromium wrote no screenshot" >&2; exit 1; }

# The terminal chart: the report's "Aggregate tok/s vs concurrency" block, pasted into README.
"$SPEC" report "$session" --format md >"$work/report.md"
"$ROOT/.venv/bin/python" - "$work/report.md" README.md <<'EOF'
import re
import sys
from pathlib import Path

report, readme = Path(sys.argv[1]).read_text(), Path(sys.argv[2])
found = re.search(r"## Aggregate tok/s vs concurrency\n\n(```\n.*?\n```)", report, re.S)
if found is None:
    sys.exit("render-report-example: the report has no aggregate chart")
begin, end = "<!-- terminal-chart:begin -->", "<!-- terminal-chart:end -->"
text = readme.read_text()
if begin not in text or end not in text:
    sys.exit(f"render-report-example: README.md lacks the {begin} / {end} markers")
head, rest = text.split(begin, 1)
tail = rest.split(end, 1)[1]
readme.write_text(f"{head}{begin}\n{found.group(1)}\n{end}{tail}")
EOF
echo "render-report-example: wrote docs/images/report-example.png and README.md's chart" >&2
