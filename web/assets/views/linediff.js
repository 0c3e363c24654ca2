// A line diff: the longest common subsequence of two texts' lines, after
// their common head and tail are set aside. The table is bounded: past
// MAX_CELLS the changed middle is shown as removed then added (still a
// correct diff, only not the shortest), so a pasted megabyte never hangs
// the page.
const MAX_CELLS = 4_000_000;

// diffLines returns [{op: ' ' | '-' | '+', text, a, b}] where a and b are
// the 1-based line numbers in the old and new text (0 where the line is
// not in it).
export function diffLines(oldText, newText) {
  const A = splitLines(oldText), B = splitLines(newText);
  let head = 0;
  while (head < A.length && head < B.length && A[head] === B[head]) head++;
  let tail = 0;
  while (tail < A.length - head && tail < B.length - head && A[A.length - 1 - tail] === B[B.length - 1 - tail]) tail++;
  const out = [];
  for (let i = 0; i < head; i++) out.push({ op: ' ', text: A[i], a: i + 1, b: i + 1 });
  const a = A.slice(head, A.length - tail), b = B.slice(head, B.length - tail);
  for (const d of middle(a, b)) {
    out.push({ op: d.op, text: d.text, a: d.i >= 0 ? head + d.i + 1 : 0, b: d.j >= 0 ? head + d.j + 1 : 0 });
  }
  for (let k = tail; k > 0; k--) out.push({ op: ' ', text: A[A.length - k], a: A.length - k + 1, b: B.length - k + 1 });
  return out;
}

function splitLines(s) {
  if (!s) return [];
  const l = String(s).replace(/\r\n?/g, '\n').split('\n');
  if (l.length && l[l.length - 1] === '') l.pop();
  return l;
}

function middle(a, b) {
  const n = a.length, m = b.length;
  if (!n || !m || n * m > MAX_CELLS) {
    return [...a.map((text, i) => ({ op: '-', text, i, j: -1 })), ...b.map((text, j) => ({ op: '+', text, i: -1, j }))];
  }
  // L[i][j]: LCS length of a[i:] and b[j:], in one flat array.
  const w = m + 1;
  const L = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      L[i * w + j] = a[i] === b[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
    }
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push({ op: ' ', text: a[i], i, j }); i++; j++; }
    else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) { out.push({ op: '-', text: a[i], i, j: -1 }); i++; }
    else { out.push({ op: '+', text: b[j], i: -1, j }); j++; }
  }
  for (; i < n; i++) out.push({ op: '-', text: a[i], i, j: -1 });
  for (; j < m; j++) out.push({ op: '+', text: b[j], i: -1, j });
  return out;
}

// hunks groups a diff for display: changed lines with up to context
// unchanged lines around them; longer unchanged runs become
// {op: 'skip', count}.
export function hunks(diff, context = 3) {
  const keep = new Array(diff.length).fill(false);
  diff.forEach((d, k) => {
    if (d.op === ' ') return;
    for (let x = Math.max(0, k - context); x <= Math.min(diff.length - 1, k + context); x++) keep[x] = true;
  });
  const out = [];
  let skipped = 0;
  diff.forEach((d, k) => {
    if (keep[k]) {
      if (skipped) { out.push({ op: 'skip', count: skipped }); skipped = 0; }
      out.push(d);
    } else skipped++;
  });
  if (skipped) out.push({ op: 'skip', count: skipped });
  return out;
}
