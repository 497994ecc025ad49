// The files of a drop, folders walked: [{file, size, path}] with paths relative to what
// was dropped (a dropped folder's name first, as a folder picker gives them).
function entryFiles(entry, prefix) {
  if (entry.isFile) {
    return new Promise((res, rej) => entry.file((f) => res([{ file: f, size: f.size, path: prefix + f.name }]), rej));
  }
  const reader = entry.createReader();
  const all = [];
  // readEntries answers in batches until it answers an empty one
  const next = () => new Promise((res, rej) => reader.readEntries(res, rej));
  return (async () => {
    for (let batch = await next(); batch.length; batch = await next()) all.push(...batch);
    const nested = await Promise.all(all.map((e) => entryFiles(e, `${prefix}${entry.name}/`)));
    return nested.flat();
  })();
}

export async function readDropped(dt) {
  const entries = [...(dt.items || [])].map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null));
  if (entries.length && entries.every(Boolean)) {
    return (await Promise.all(entries.map((e) => entryFiles(e, "")))).flat();
  }
  return [...dt.files].map((f) => ({ file: f, size: f.size, path: f.name }));
}
