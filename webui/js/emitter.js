// A tiny event emitter: stores extend it so views can listen for changes.

export class Emitter {
  constructor() {
    this._handlers = new Map();
  }

  /** Call `fn(detail)` on every `type` event; returns the function that stops it. */
  on(type, fn) {
    if (!this._handlers.has(type)) this._handlers.set(type, new Set());
    this._handlers.get(type).add(fn);
    return () => this._handlers.get(type).delete(fn);
  }

  emit(type, detail) {
    const handlers = this._handlers.get(type);
    if (!handlers) return;
    for (const fn of [...handlers]) {
      try {
        fn(detail);
      } catch (err) {
        // One broken listener must not stop the others (or the socket handler).
        console.error(`listener of "${type}" failed`, err);
      }
    }
  }
}
