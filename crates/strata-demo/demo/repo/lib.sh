# textkit: small text and number helpers for POSIX shells.
# Source it: . ./lib.sh

# upper TEXT: TEXT in upper case.
upper() {
    printf '%s\n' "$1" | tr '[:lower:]' '[:upper:]'
}

# repeat TEXT N: TEXT written N times.
repeat() {
    out=''
    i=0
    while [ "$i" -lt "$2" ]; do
        out="$out$1"
        i=$((i + 1))
    done
    printf '%s\n' "$out"
}

# max A B: the larger of two integers.
max() {
    if [ "$1" -lt "$2" ]; then
        printf '%s\n' "$1"
    else
        printf '%s\n' "$2"
    fi
}
