"use strict";
// The DOM helpers both pages share (rag/doors/page.html and bericht.html): the server puts this
// file in where a page says "<!-- dom.js -->" (pages.py page_text). Text goes in with textContent:
//   $("status")                 -> the element with the id "status"
//   el("li", "Quota", "pfad")   -> <li class="pfad">Quota</li>, the text as text, never as HTML
//   clear(list)                 -> the list, now without children
// Does not handle: HTML of any kind (shown as text), attributes other than the class.
const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
