#!/usr/bin/env bash
# Makes the Spark driver's class-data archive (spark_tasks/tuning.py, "Start-up"): the JVM of a
# report on a small generated history writes the classes it loaded to ARCHIVE as it exits
# (-XX:ArchiveClassesAtExit, JDK 13+), and every later report's JVM maps them instead of
# loading them from Spark's jars (-XX:SharedArchiveFile): the session starts in half the time.
# The archive belongs to this virtualenv's PySpark and this machine's JDK; a JVM that finds it
# stale ignores it silently (then run this again). Usage: scripts/spark-class-archive.sh ARCHIVE
# [HISTORY]: the report runs on HISTORY when given (a directory of the history's Parquet files),
# else on a 300-event history generated for it (what make does): its report loads the classes
# a bigger one does (a 5,000-event history's archive is as large, and reports start from either
# as fast), and the history takes 1 s to generate instead of 9.
set -euo pipefail
archive=$1
python=.venv/bin/python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
history=${2:-$work/history}
if [ $# -lt 2 ]; then
    "$python" -c 'import sys; from webapp.simulation.history import generate_history
generate_history(sys.argv[1], 300, seed=0, jobs=1)' "$history"
fi
# PySpark's launcher adds SPARK_SUBMIT_OPTS to the driver JVM's options. The JVM writes the
# archive after the Python process has ended: the pipe is read to its end, which comes when the
# JVM (which shares it) has exited too.
SPARK_SUBMIT_OPTS="-XX:ArchiveClassesAtExit=$work/classes.jsa -Xlog:cds=off -Xlog:cds+dynamic=off" \
    "$python" -m spark_tasks rebalance_report --input "$history" --output "$work/report" \
    --master "local[2]" --no-ui 2>&1 | grep '^rebalance_report'
[ -s "$work/classes.jsa" ] || { echo "error: the JVM wrote no class archive" >&2; exit 1; }
mv "$work/classes.jsa" "$archive"
echo "Spark class archive: $archive ($(du -h "$archive" | cut -f1))"
