#!/usr/bin/env bash
# The README's screenshot, taken for real: the seeds' scene (UDP between two
# network namespaces on CPU 0, RPS steering its receive work onto CPU 1,
# `openssl speed` pinned to CPU 1), nettop in tmux, and tmux shown in an
# xterm on a virtual X display (Xvfb) for the picture.
#
#     bash scripts/screenshot.sh [NETTOP] [OUT_DIR]
#
# Writes OUT_DIR/screenshot.png and OUT_DIR/screenshot.txt (default
# docs/). Needs root, iperf3, openssl, tmux, and for the picture xvfb,
# xterm and imagemagick (apt-get install xvfb xterm imagemagick).
# Everything it starts is stopped and every namespace removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/nettop}
out=${2:-docs}
cols=120
rows=36
source bench/netns-load.sh
sock="nettop-shot-$$"
xpid=""
opid=""
cleanup() {
    tmux -L "$sock" kill-server 2>/dev/null || true
    [[ -n $xpid ]] && kill "$xpid" 2>/dev/null || true
    [[ -n $opid ]] && kill "$opid" 2>/dev/null || true
    netns_down
}
trap cleanup EXIT

netns_up 2
load_start 120 0
# The seeds' victim: a crypto benchmark pinned where the receive work lands.
taskset -c 1 openssl speed -seconds 110 -bytes 8192 sha256 >/dev/null 2>&1 &
opid=$!
sleep 3

tmux -L "$sock" -f /dev/null new-session -d -s shot -x "$cols" -y "$rows" \
    "$bin --no-config -d 2"
# No status bar: the xterm below shows exactly nettop's screen.
tmux -L "$sock" set-option -g status off
# Two frames, and the calibration on a first start of the boot.
sleep 8
tmux -L "$sock" capture-pane -p -t shot >"$out/screenshot.txt"
echo ">>> $out/screenshot.txt"

if command -v Xvfb >/dev/null && command -v xterm >/dev/null && command -v import >/dev/null; then
    Xvfb :91 -screen 0 1600x1000x24 >/dev/null 2>&1 &
    xpid=$!
    sleep 1
    DISPLAY=:91 xterm -geometry "${cols}x${rows}+0+0" -fa 'DejaVu Sans Mono' -fs 10 \
        -bg black -fg grey90 -e tmux -L "$sock" attach -t shot >/dev/null 2>&1 &
    # Attaching may resize the window: let nettop redraw, then a frame.
    sleep 7
    DISPLAY=:91 import -window root -trim "$out/screenshot.png"
    echo ">>> $out/screenshot.png"
else
    echo "no Xvfb/xterm/imagemagick: text only" >&2
fi
