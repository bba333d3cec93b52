// Thumbnails of a chat's images: the user's image attachments (in the message and in the
// composer before it is sent) and the images vision_load looked at. Each opens full size
// in a new tab. Only Cadre's own address for a chat's image is ever used as a source: the
// paths come from the log, which a misled model can write into.

import { h } from "../dom.js";

const IMAGE_NAME = /\.(png|jpe?g|gif|webp)$/i;

/** Where the page fetches the chat's image `path` ("attachments/x.png"), or null. */
export function imageUrl(chatId, path) {
  const match = /^(attachments|images)\/([A-Za-z0-9_-][A-Za-z0-9._-]*)$/.exec(String(path));
  if (!chatId || !match) return null;
  return `/api/chats/${encodeURIComponent(chatId)}/images/${match[1]}/${encodeURIComponent(match[2])}`;
}

/** True for a file name a model can be shown as an image. */
export function isImageName(name) {
  return IMAGE_NAME.test(String(name));
}

export function baseName(path) {
  return String(path).split(/[\\/]/).pop() || String(path);
}

/** A thumbnail linking to the image full size. */
export function thumb(url, name) {
  return h("a", {
    class: "thumb", href: url, target: "_blank", rel: "noopener",
    title: `Open ${name} full size`, "aria-label": `Open ${name} full size`, testid: "image-thumb",
  }, h("img", { src: url, alt: name, loading: "lazy" }));
}

/** A message's attachment as a list entry: a thumbnail and its name when it is an image. */
export function attachmentEntry(chatId, path) {
  const name = baseName(path);
  const url = isImageName(name) ? imageUrl(chatId, `attachments/${name}`) : null;
  return url ? h("li", { class: "image-file" }, thumb(url, name), h("span", {}, name)) : h("li", {}, name);
}

/** The tiles of the images a tool looked at (kvps.images: paths in the chat's folder). */
export function imageTiles(chatId, paths) {
  return (Array.isArray(paths) ? paths : []).map((path) => {
    const url = imageUrl(chatId, path);
    const name = baseName(path);
    return h("li", { class: "image-file" }, url ? thumb(url, name) : null, h("span", {}, name));
  });
}
