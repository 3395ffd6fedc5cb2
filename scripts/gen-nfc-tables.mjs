// Writes src/tokenizer/nfc_tables.inc: what Unicode Normalization Form C needs (src/tokenizer/
// nfc.cpp), derived from the String.prototype.normalize of the Node.js that runs it (its ICU,
// the same the JavaScript tokenizer oracle uses; the version is written into the file):
//   kDecompositions / kDecompositionChars  full canonical decompositions (NFD of one code
//                                          point), Hangul syllables aside (algorithmic)
//   kCombiningRanks                        the non-starters, each with a rank that orders them
//                                          as their canonical combining classes do
//   kCompositions                          the (first, second) -> composite pairs of
//                                          canonical composition, Hangul aside
// JavaScript exposes no combining class, so the ranks come from canonical reordering itself:
// NFD(a + b) swaps two non-starters exactly when ccc(a) > ccc(b). Before writing, the tables
// drive an implementation of the algorithm here that must agree with normalize('NFC') on
// every code point, on every code point followed by combining marks, and on random mixtures.
//   node scripts/gen-nfc-tables.mjs > src/tokenizer/nfc_tables.inc
const S = (...cps) => String.fromCodePoint(...cps);
const cps = (s) => [...s].map((c) => c.codePointAt(0));
const isHangulSyllable = (cp) => cp >= 0xac00 && cp <= 0xd7a3;
const scalar = (cp) => !(cp >= 0xd800 && cp <= 0xdfff);

// ---- decompositions
const decomp = new Map();  // cp -> [cps] (full canonical decomposition)
for (let cp = 0x80; cp <= 0x10ffff; cp++) {
    if (!scalar(cp) || isHangulSyllable(cp)) continue;
    const d = S(cp).normalize('NFD');
    if (d !== S(cp)) decomp.set(cp, cps(d));
}

// ---- non-starters: 0 < ccc < 240 moves before U+0345 (ccc 240); ccc > 1 lets U+0334 (ccc 1)
// move before it. A starter (ccc 0) never moves and blocks.
const nonStarters = [];
for (let cp = 0x300; cp <= 0x10ffff; cp++) {
    if (!scalar(cp) || decomp.has(cp) || isHangulSyllable(cp)) continue;
    const c = S(cp);
    if (S(0x345, cp).normalize('NFD') === c + S(0x345) ||
        S(cp, 0x334).normalize('NFD') === S(0x334) + c || cp === 0x345 || cp === 0x334)
        nonStarters.push(cp);
}
const cmp = (a, b) => {
    if (a === b) return 0;
    if (S(b, a).normalize('NFD') === S(a, b)) return -1;  // b, a reordered: ccc(a) < ccc(b)
    if (S(a, b).normalize('NFD') === S(b, a)) return 1;
    return 0;
};
nonStarters.sort((a, b) => cmp(a, b) || a - b);
const rank = new Map();
let r = 0;
for (let i = 0; i < nonStarters.length; i++) {
    if (i === 0 || cmp(nonStarters[i - 1], nonStarters[i]) !== 0) r++;
    rank.set(nonStarters[i], r);
}
if (r > 255) throw new Error('more than 255 combining classes');

// ---- compositions: each primary composite P (NFC(P) = P, NFD(P) != P) is some X + m where X
// is one code point and m one character of its decomposition.
const compose = new Map();  // first * 0x110000 + second -> composite
for (const [p, d] of decomp) {
    if (S(p).normalize('NFC') !== S(p) || d.length < 2) continue;
    let found = false;
    for (let k = d.length - 1; k >= 1 && !found; k--) {
        const rest = d.slice(0, k).concat(d.slice(k + 1));
        const x = cps(S(...rest).normalize('NFC'));
        if (x.length === 1 && S(x[0], d[k]).normalize('NFC') === S(p)) {
            compose.set(x[0] * 0x110000 + d[k], p);
            found = true;
        }
    }
    if (!found) throw new Error(`no composition pair for U+${p.toString(16)}`);
}

// ---- the algorithm on these tables (nfc.cpp is the same), checked against normalize('NFC')
const SBase = 0xac00, LBase = 0x1100, VBase = 0x1161, TBase = 0x11a7, VCount = 21, TCount = 28;
const NCount = VCount * TCount;
function nfc(s) {
    const out = [];
    for (const cp of cps(s)) {
        if (isHangulSyllable(cp)) {
            const i = cp - SBase;
            out.push(LBase + Math.floor(i / NCount), VBase + Math.floor((i % NCount) / TCount));
            if (i % TCount) out.push(TBase + (i % TCount));
        } else {
            out.push(...(decomp.get(cp) || [cp]));
        }
    }
    for (let i = 1; i < out.length; i++) {  // canonical ordering: stable, by rank
        const rk = rank.get(out[i]) || 0;
        if (!rk) continue;
        let j = i;
        while (j > 0 && (rank.get(out[j - 1]) || 0) > rk) { [out[j - 1], out[j]] = [out[j], out[j - 1]]; j--; }
    }
    const res = [];
    let starter = -1, lastRank = 0;
    for (const c of out) {
        const rk = rank.get(c) || 0;
        if (starter >= 0 && (res.length - 1 === starter || (lastRank !== 0 && lastRank < rk))) {
            const s = res[starter];
            let p;
            if (s >= LBase && s < LBase + 19 && c >= VBase && c < VBase + VCount)
                p = SBase + ((s - LBase) * VCount + (c - VBase)) * TCount;
            else if (isHangulSyllable(s) && (s - SBase) % TCount === 0 && c > TBase && c < TBase + TCount)
                p = s + (c - TBase);
            else
                p = compose.get(s * 0x110000 + c);
            if (p !== undefined) {
                res[starter] = p;
                continue;
            }
        }
        if (rk === 0) { starter = res.length; lastRank = 0; } else { lastRank = rk; }
        res.push(c);
    }
    return S(...res);
}
let checked = 0;
const fail = (s) => { throw new Error('mismatch on ' + cps(s).map((c) => c.toString(16)).join(' ')); };
const marks = [0x301, 0x300, 0x308, 0x323, 0x327, 0x334, 0x345, 0x302, 0x31b, 0x3099];
for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (!scalar(cp)) continue;
    const s = S(cp);
    if (nfc(s) !== s.normalize('NFC')) fail(s);
    checked++;
    if (cp < 0x3000 || decomp.has(cp) || rank.has(cp) || isHangulSyllable(cp) ||
        (cp >= 0x1100 && cp < 0x1200)) {
        for (const m of marks) {
            const t = S(cp, m);
            if (nfc(t) !== t.normalize('NFC')) fail(t);
            checked++;
        }
    }
}
// Random mixtures of composites, their parts, marks, Hangul jamo and ASCII (seeded).
const pool = [...decomp.keys(), ...nonStarters, ...[...decomp.values()].flat(), 0x1100, 0x1161,
              0x11a8, 0xac00, 0xac01, 0x41, 0x61, 0x20];
let seed = 12345;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
for (let i = 0; i < 200000; i++) {
    const len = 1 + rnd(6);
    const t = S(...Array.from({ length: len }, () => pool[rnd(pool.length)]));
    if (nfc(t) !== t.normalize('NFC')) fail(t);
    checked++;
}

// ---- the file
const hex = (n) => '0x' + n.toString(16).toUpperCase();
let out = `// Generated by scripts/gen-nfc-tables.mjs from Unicode ${process.versions.unicode}` +
    ` (Node ${process.versions.node}, ICU ${process.versions.icu}); do not edit.\n` +
    `// Checked there against String.prototype.normalize('NFC') on ${checked} strings.\n`;
const pool2 = [];
out += '// {code point, first char in kDecompositionChars, length}, by code point.\n';
out += 'constexpr Decomposition kDecompositions[] = {\n';
const dk = [...decomp.keys()].sort((a, b) => a - b);
const rows = [];
for (const cp of dk) {
    const d = decomp.get(cp);
    rows.push(`{${hex(cp)}, ${pool2.length}, ${d.length}}`);
    pool2.push(...d);
}
for (let i = 0; i < rows.length; i += 4) out += '    ' + rows.slice(i, i + 4).join(', ') + ',\n';
out += '};\nconstexpr char32_t kDecompositionChars[] = {\n';
for (let i = 0; i < pool2.length; i += 8) out += '    ' + pool2.slice(i, i + 8).map(hex).join(', ') + ',\n';
out += '};\n// {code point, rank}: the non-starters, by code point; ranks order as combining classes.\n';
out += 'constexpr CombiningRank kCombiningRanks[] = {\n';
const rk = [...rank.entries()].sort((a, b) => a[0] - b[0]).map(([c, n]) => `{${hex(c)}, ${n}}`);
for (let i = 0; i < rk.length; i += 6) out += '    ' + rk.slice(i, i + 6).join(', ') + ',\n';
out += '};\n// {first, second, composite}, by (first, second).\nconstexpr Composition kCompositions[] = {\n';
const cs = [...compose.entries()].sort((a, b) => a[0] - b[0])
    .map(([k, p]) => `{${hex(Math.floor(k / 0x110000))}, ${hex(k % 0x110000)}, ${hex(p)}}`);
for (let i = 0; i < cs.length; i += 4) out += '    ' + cs.slice(i, i + 4).join(', ') + ',\n';
out += '};\n';
process.stdout.write(out);
