# folded.sh: reading folded stacks (rbinspect report --format folded), for the profile tests
# and the benches (sourced).

# leaf_share FOLDED 'LABEL|LABEL...': percentage of samples whose innermost frame is one of
# the LABELs (folded made with --no-lines: frames are "label (path)").
leaf_share() {
	awk -v labels="$2" '
		BEGIN { n = split(labels, l, "|"); for (i = 1; i <= n; i++) want[l[i]] = 1 }
		{ c = $NF; total += c; line = $0; sub(/ [0-9]+$/, "", line)
		  k = split(line, fr, ";"); leaf = fr[k]; sub(/ \(.*$/, "", leaf)
		  if (leaf in want) hit += c }
		END { if (total) printf "%.1f\n", 100 * hit / total; else print "0" }' "$1"
}
