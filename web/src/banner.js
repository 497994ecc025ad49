// The page-level banner area (#banner): one message per key, replaced or cleared by key.
export function showBanner(level, text, key = "main", actions = []) {
  const root = document.getElementById("banner");
  let el = root.querySelector(`[data-key="${key}"]`);
  if (!el) {
    el = document.createElement("div");
    el.dataset.key = key;
    root.appendChild(el);
  }
  el.className = `banner banner-${level}`;
  el.textContent = text;
  for (const [label, fn] of actions) {
    const b = document.createElement("button");
    b.textContent = label;
    b.addEventListener("click", fn);
    el.appendChild(b);
  }
  return el;
}

export function clearBanner(key = "main") {
  const el = document.querySelector(`#banner [data-key="${key}"]`);
  if (el) el.remove();
}
