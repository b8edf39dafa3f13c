"use strict";
// The answer's Markdown as DOM nodes, for rag/doors/page.html (the server puts this file into the
// page, pages.py page_text). Every text goes in with textContent or createTextNode, never as HTML:
// a "<br>" or an onerror= of a wiki page shows as text. What it renders:
//   ```sh … ```       a code block: <pre><code> with a "Kopieren" button (a fence still open while
//                     the answer streams runs to the end)
//   1. / - / * / +    list items, ordered or not, one list per run of items
//   **fett**, `code`  bold and inline code; [Text](https://…) a link, only http(s) or relative
//   [2], [1, 3]       citations: cite(numbers) makes their nodes (the page links them to sources)
// Other lines stay lines of a paragraph. Does not handle: tables, headings, nested lists, images,
// HTML of any kind (shown as text), emphasis with one * or _.
const MD_FENCE = /^\s*(```|~~~)\s*([\w+-]*)\s*$/;
const MD_ITEM = /^\s*(?:(\d{1,3})[.)]|[-*+•])\s+(.*)$/;
const MD_INLINE = new RegExp([  // code, bold, link, citation
  "(`[^`\\n]+`)", "(\\*\\*[^*\\n]+?\\*\\*)", "(\\[[^\\]\\n]+\\]\\([^)\\s]+\\))",
  "(\\[\\d+(?:\\s*[,;]\\s*\\d+)*\\])"].join("|"));

function mdNode(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function mdSafeUrl(url) {  // "https://a.example/x", "../b.md", "#x" stay; "javascript:…": null
  if (/[\x00-\x20\x7f\\]/.test(url)) return null;  // browsers drop controls and read "\" as "/"
  if (/^https?:\/\//i.test(url)) return url;
  return /^\/\/|^[a-z][\w+.-]*:/i.test(url) ? null : url;  // another host, another scheme
}

function mdInline(text, parent, cite) {  // one line's inline Markdown into parent
  let rest = text;
  while (rest) {
    const m = MD_INLINE.exec(rest);
    if (!m) { parent.appendChild(document.createTextNode(rest)); return; }
    if (m.index) parent.appendChild(document.createTextNode(rest.slice(0, m.index)));
    const token = m[0];
    if (m[1]) parent.appendChild(mdNode("code", token.slice(1, -1)));
    else if (m[2]) {
      const strong = mdNode("strong");
      mdInline(token.slice(2, -2), strong, cite);
      parent.appendChild(strong);
    } else if (m[3]) {
      const cut = token.indexOf("](");
      const label = token.slice(1, cut), url = mdSafeUrl(token.slice(cut + 2, -1));
      if (url === null) parent.appendChild(document.createTextNode(label));
      else {
        const a = mdNode("a", label);
        a.setAttribute("href", url);
        a.rel = "noopener noreferrer";
        parent.appendChild(a);
      }
    } else if (cite) parent.appendChild(cite(token.slice(1, -1).split(/\s*[,;]\s*/).map(Number)));
    else parent.appendChild(document.createTextNode(token));
    rest = rest.slice(m.index + token.length);
  }
}

function mdCodeBlock(lines, lang) {  // <div class="code"><button>Kopieren</button><pre><code>…
  const box = mdNode("div", null, "code"), pre = mdNode("pre");
  const code = mdNode("code", lines.join("\n"));
  if (lang) code.dataset.lang = lang;
  const button = mdNode("button", "Kopieren", "kopieren");
  button.type = "button";
  button.title = "Befehle in die Zwischenablage kopieren";
  button.addEventListener("click", () => mdCopy(code.textContent, button));
  pre.appendChild(code);
  box.appendChild(button);
  box.appendChild(pre);
  return box;
}

function mdCopy(text, button) {  // the clipboard API in a secure context, else a selection
  const done = (ok) => { button.textContent = ok ? "Kopiert" : "Markieren und kopieren"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => done(true), () => done(false));
    return;
  }
  const area = mdNode("textarea");
  area.value = text;
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
  document.body.removeChild(area);
  done(ok);
}

function renderMarkdown(text, box, cite) {  // box's children replaced by the rendered text
  while (box.firstChild) box.removeChild(box.firstChild);
  const lines = String(text || "").split("\n");
  let list = null, para = null;
  for (let i = 0; i < lines.length; i++) {
    const fence = MD_FENCE.exec(lines[i]);
    if (fence) {
      const body = [];
      for (i++; i < lines.length && lines[i].trim() !== fence[1]; i++) body.push(lines[i]);
      box.appendChild(mdCodeBlock(body, fence[2]));
      list = para = null;
      continue;
    }
    const item = MD_ITEM.exec(lines[i]);
    if (item) {
      const kind = item[1] ? "ol" : "ul";
      if (!list || list.tagName.toLowerCase() !== kind) {
        list = mdNode(kind);
        if (item[1] && item[1] !== "1") list.start = Number(item[1]);
        box.appendChild(list);
      }
      const li = mdNode("li");
      mdInline(item[2], li, cite);
      list.appendChild(li);
      para = null;
      continue;
    }
    list = null;
    if (!lines[i].trim()) { para = null; continue; }
    if (para) para.appendChild(mdNode("br"));
    else { para = mdNode("p"); box.appendChild(para); }
    mdInline(lines[i], para, cite);
  }
}
