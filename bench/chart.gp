# chart.gp - the benchmark chart: redirects/s and CPU per redirect, shortd
# against nginx, per link count and layout.
#   gnuplot -e "dat='RUN/chart.dat'; out='RUN/chart.png'; sub='...'" bench/chart.gp
set terminal pngcairo size 1400,560 font "DejaVu Sans,11"
set output out
if (!exists("sub")) sub = ""
set multiplot layout 1,2 title "shortd vs nginx: 302 redirects on loopback (random codes, analytics on)\n".sub noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set xtics noenhanced
set yrange [0:*]
set bmargin 5
set offsets 0.4, 0.4, 0, 0

set title "requests per second (median)"
set format y "%.0f"
plot dat using 2:xtic(1) title "shortd" lc rgb "#2b7bba", \
     ''  using 3 title "nginx" lc rgb "#6aa84f"

set title "server CPU per request (µs, all threads/processes)"
set format y "%.1f"
plot dat using 4:xtic(1) title "shortd" lc rgb "#2b7bba", \
     ''  using 5 title "nginx" lc rgb "#6aa84f"
unset multiplot
