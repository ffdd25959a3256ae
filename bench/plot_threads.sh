#!/usr/bin/env bash
# Plots bench/threads.sh's CSV as an SVG line chart (log-log): CPU seconds
# per frame against thread count, one line per tool.
#   bench/plot_threads.sh results.csv out.svg
set -euo pipefail
csv=${1:?csv}
svg=${2:?svg}
awk -F, '
function lx(v) { return log(v) / log(10) }
function X(n) { return L + (lx(n) - x0) / (x1 - x0) * W }
function Y(v) { if (v < ymin) v = ymin; return T + H - (lx(v) - y0) / (y1 - y0) * H }
NR == 1 { next }
{ n[++k] = $1; for (c = 2; c <= 5; c++) v[k, c] = $c }
END {
    L = 70; T = 30; W = 560; H = 340; ymin = 0.001
    x0 = lx(n[1]); x1 = lx(n[k]); if (x1 == x0) x1 = x0 + 1
    y0 = -3; y1 = 1
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"420\" font-family=\"sans-serif\" font-size=\"12\">\n"
    printf "<rect width=\"760\" height=\"420\" fill=\"white\"/>\n"
    printf "<text x=\"%d\" y=\"18\" font-size=\"14\">CPU seconds per frame vs threads in one process (log-log)</text>\n", L
    for (e = y0; e <= y1; e++) {
        y = T + H - (e - y0) / (y1 - y0) * H
        printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y, L + W, y
        printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g s</text>\n", L - 6, y + 4, 10 ^ e
    }
    for (i = 1; i <= k; i++) {
        x = X(n[i])
        printf "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>\n", x, T, x, T + H
        printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%dk</text>\n", x, T + H + 16, n[i] / 1000
    }
    printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">threads</text>\n", L + W / 2, T + H + 34
    split("nettop -b|nettop -b -H|top -b|top -b -H", name, "|")
    split("#d62728|#ff9896|#1f77b4|#aec7e8", col, "|")
    for (c = 2; c <= 5; c++) {
        pts = ""
        for (i = 1; i <= k; i++) pts = pts sprintf("%.1f,%.1f ", X(n[i]), Y(v[i, c]))
        printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", col[c - 1], pts
        for (i = 1; i <= k; i++) printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", X(n[i]), Y(v[i, c]), col[c - 1]
        ly = T + 10 + (c - 2) * 18
        printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n", L + W + 10, ly, L + W + 30, ly, col[c - 1]
        printf "<text x=\"%d\" y=\"%d\">%s</text>\n", L + W + 34, ly + 4, name[c - 1]
    }
    printf "</svg>\n"
}' "$csv" >"$svg"
