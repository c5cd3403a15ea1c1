#!/bin/bash
# usage: p.sh SEED 'turn'
S=$1; shift
if [ -z "$1" ]; then /tmp/blind11/play CB-hard --seed $S --transcript /tmp/blind11/CB-hard/seed$S.txt --no-reveal
else /tmp/blind11/play CB-hard --seed $S --transcript /tmp/blind11/CB-hard/seed$S.txt --no-reveal --append "$1"; fi
