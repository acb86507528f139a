#!/bin/sh
# Exploration only: what does btvirt create, is the adapter up, what does the kernel do.
BIN=$1; OUT=$2
echo "uptime $(cut -d' ' -f1 /proc/uptime)"
btvirt -l2 & sleep 3
ls /sys/class/bluetooth
hciconfig -a
btmgmt info
echo PASS explore > $OUT/checks
echo DONE
