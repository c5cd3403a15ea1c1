#!/bin/bash
s=$1; shift
/tmp/blind14/play P4G-hard --seed $s --transcript /tmp/blind14/P4G-hard/seed$s.txt --no-reveal --append "$1" 2>&1 | tail -n 15
