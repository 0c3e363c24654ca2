// A source editor without a library: a <textarea> (no wrapping, so one
// text line is one row) beside a line-number gutter, with problem lines
// marked in the gutter and highlighted behind the text. The row height is
// fixed in editor.css (--code-lh); gutter and highlights follow the
// textarea's scroll. Tab indents (two spaces); Escape then Tab leaves the
// editor, as in other code editors, so the keyboard is never trapped.
import { h } from '../ui.js';

export function codeEditor({ value, label, readOnly, describedBy }) {
  const gutterInner = h('div', { class: 'code-gutter-inner' });
  const gutter = h('div', { class: 'code-gutter', 'aria-hidden': 'true' }, gutterInner);
  const marks = h('div', { class: 'code-marks', 'aria-hidden': 'true' });
  const ta = h('textarea', { class: 'code-text', spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off', wrap: 'off',
    'aria-label': label, 'aria-describedby': describedBy || null, readonly: readOnly || null, id: 'contract-editor' });
  ta.value = value || '';
  // Tall enough for the source and a few lines more, within 16 to 32 rows
  // (the user may resize it).
  ta.style.setProperty('--code-rows', String(Math.min(32, Math.max(16, ta.value.split('\n').length + 3))));
  const el = h('div', { class: 'code-editor' + (readOnly ? ' read-only' : '') }, gutter, h('div', { class: 'code-area' }, marks, ta));
  let problems = new Map(); // line -> [messages]
  let lines = -1;
  let escaped = false;

  const lineHeight = () => parseFloat(getComputedStyle(ta).lineHeight) || 20;
  const padTop = () => parseFloat(getComputedStyle(ta).paddingTop) || 0;

  function renderGutter() {
    const n = ta.value.split('\n').length;
    if (n === lines && !renderGutter.dirty) return;
    lines = n; renderGutter.dirty = false;
    const frag = document.createDocumentFragment();
    for (let i = 1; i <= n; i++) {
      const msgs = problems.get(i);
      frag.appendChild(h('div', { class: 'ln' + (msgs ? ' err' : ''), title: msgs ? msgs.join('\n') : null, 'data-line': String(i) },
        msgs ? h('span', { class: 'mark' }, '●') : null, String(i)));
    }
    gutterInner.replaceChildren(frag);
  }
  function renderMarks() {
    const lh = lineHeight(), top = padTop();
    marks.replaceChildren(...[...problems.keys()].map((line) => h('div', { class: 'code-mark', style: `top:${top + (line - 1) * lh}px;height:${lh}px` })));
  }
  function sync() {
    gutterInner.style.transform = `translateY(${-ta.scrollTop}px)`;
    marks.style.transform = `translate(${-ta.scrollLeft}px, ${-ta.scrollTop}px)`;
  }
  ta.addEventListener('scroll', sync);
  // The caret moved (keys, clicks, selection changes from script).
  const onSelection = () => {
    if (!ta.isConnected) document.removeEventListener('selectionchange', onSelection);
    else if (document.activeElement === ta) ta.dispatchEvent(new Event('caret'));
  };
  document.addEventListener('selectionchange', onSelection);
  ta.addEventListener('input', () => { renderGutter(); sync(); });
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { escaped = true; return; }
    if (e.key === 'Tab' && !e.shiftKey && !escaped && !ta.readOnly && !e.ctrlKey && !e.altKey && !e.metaKey) {
      e.preventDefault();
      // execCommand keeps the browser's undo history; setRangeText is the fallback.
      if (!document.execCommand || !document.execCommand('insertText', false, '  ')) {
        ta.setRangeText('  ', ta.selectionStart, ta.selectionEnd, 'end');
        ta.dispatchEvent(new Event('input', { bubbles: true }));
      }
      return;
    }
    escaped = false;
  });

  // currentLine is the 1-based line of the caret.
  function currentLine() { return ta.value.slice(0, ta.selectionStart).split('\n').length; }

  // goToLine puts the caret at the start of line n and scrolls it into view.
  function goToLine(n) {
    const all = ta.value.split('\n');
    n = Math.max(1, Math.min(n, all.length));
    let pos = 0;
    for (let i = 0; i < n - 1; i++) pos += all[i].length + 1;
    ta.focus({ preventScroll: true });
    ta.setSelectionRange(pos, pos);
    const lh = lineHeight();
    const y = (n - 1) * lh;
    if (y < ta.scrollTop || y + lh > ta.scrollTop + ta.clientHeight) ta.scrollTop = Math.max(0, y - ta.clientHeight / 3);
    ta.scrollLeft = 0;
    sync();
    el.scrollIntoView({ block: 'nearest' });
    ta.dispatchEvent(new Event('caret'));
  }

  // setProblems marks lines: [{line, message}] (line 0: not on a line).
  function setProblems(list) {
    problems = new Map();
    for (const p of list || []) {
      if (!p.line) continue;
      const l = problems.get(p.line) || [];
      l.push(p.message);
      problems.set(p.line, l);
    }
    renderGutter.dirty = true;
    renderGutter(); renderMarks(); sync();
  }

  function setValue(v) { ta.value = v; renderGutter(); sync(); ta.dispatchEvent(new Event('input', { bubbles: true })); }

  renderGutter();
  requestAnimationFrame(() => { renderMarks(); sync(); });
  return { el, textarea: ta, setProblems, goToLine, currentLine, setValue, problemsAt: (line) => problems.get(line) || [] };
}
