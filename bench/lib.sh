# Shared by the bench scripts (source it after setting src=<repo> and TRAINRT=<cli>).

# bench_workdir NAME: a scratch folder /tmp/NAME.XXXXXX in $work (removed on exit), entered,
# with byte-level tinyshakespeare prepared into data/ (train.bin, val.bin).
bench_workdir() {
    work=$(mktemp -d "/tmp/$1.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    cd "$work"
    # ../shared beside the checkout on the dev machines; the tree's copy on a GPU machine
    local text=$src/../shared/data/tinyshakespeare.txt
    [ -f "$text" ] || text=$src/examples/data/tinyshakespeare.txt
    "$TRAINRT" prepare --text "$text" --out data >/dev/null
}

# bench_machine: a results file's date, commit and CPU lines (model, cores, bf16 flags).
bench_machine() {
    local flags
    flags=$(grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')
    echo "- date: $(date -u '+%F %T UTC'); commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo ?)"
    echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; flags: ${flags:-none}"
}
