// Records the microphone as 16 kHz mono 16-bit WAV, which the built-in speech model reads
// (models/speech_builtin.py: it has no decoder for the Opus a MediaRecorder makes). The
// samples come through Web Audio (wav-capture.worklet.js), are brought down to 16 kHz as
// they come (each output sample the mean of the inputs it stands for: speech keeps its
// words, and ten minutes stay 19 MB), and written as WAV at the end.
//
// It looks like the MediaRecorder that views/voice-input.js drives: start(), stop(),
// `state`, `mimeType`, and the events "dataavailable" (the whole WAV, once), "stop" and
// "error".

const RATE = 16000;
const WORKLET = new URL("./wav-capture.worklet.js", import.meta.url);

/** Whether this browser can record WAV here. */
export function canRecordWav() {
  const Context = window.AudioContext || window.webkitAudioContext;
  return Boolean(Context && window.AudioWorkletNode);
}

export class WavRecorder extends EventTarget {
  /** A recorder of `stream` (its audio graph set up; throws when it cannot be). */
  static async open(stream) {
    const Context = window.AudioContext || window.webkitAudioContext;
    const context = new Context();
    try {
      await context.audioWorklet.addModule(WORKLET);
      const source = context.createMediaStreamSource(stream);
      const node = new AudioWorkletNode(context, "cadre-capture");
      const silent = context.createGain(); // pulled by the output, which hears nothing
      silent.gain.value = 0;
      source.connect(node).connect(silent).connect(context.destination);
      return new WavRecorder(context, source, node);
    } catch (err) {
      context.close().catch(() => {});
      throw err;
    }
  }

  constructor(context, source, node) {
    super();
    this.context = context;
    this.source = source;
    this.node = node;
    this.state = "inactive";
    this.mimeType = "audio/wav";
    this.down = new Downsampler(context.sampleRate, RATE);
  }

  start() {
    this.state = "recording";
    this.node.port.onmessage = (event) => {
      // A block on its way when stop() ran comes before the flushed rest: only the rest ends it.
      const rest = event.data?.rest;
      this.down.push(rest ?? event.data);
      if (rest && this.state === "stopping") this.finish();
    };
    this.context.resume().catch((err) => this.failed(err));
  }

  stop() {
    if (this.state !== "recording") return;
    this.state = "stopping";
    this.node.port.postMessage("flush");
    // The rest comes back in a moment; a closed audio thread never answers.
    this.timer = setTimeout(() => this.finish(), 500);
  }

  finish() {
    if (this.state !== "stopping") return;
    this.state = "inactive";
    clearTimeout(this.timer);
    this.close();
    const data = wavBlob(this.down.samples(), RATE);
    this.dispatchEvent(Object.assign(new Event("dataavailable"), { data }));
    this.dispatchEvent(new Event("stop"));
  }

  failed(error) {
    if (this.state === "inactive") return;
    this.state = "inactive";
    this.close();
    this.dispatchEvent(Object.assign(new Event("error"), { error }));
  }

  close() {
    this.node.port.onmessage = null;
    this.source.disconnect();
    this.node.disconnect();
    this.context.close().catch(() => {});
  }
}

/** From the device's rate to `rate`, as blocks come: 16-bit samples out. Above 16 kHz an
 * output is the mean of the inputs it stands for; below (a headset in call mode records at
 * 8 kHz) an input is held for the outputs it stands for. */
export class Downsampler {
  constructor(from, to) {
    this.step = from / to; // inputs an output stands for (3 from 48 kHz, 0.5 from 8 kHz)
    this.sum = 0;
    this.count = 0;
    this.last = 0;
    this.until = this.step;
    this.at = 0;
    this.chunks = [];
  }

  push(block) {
    const out = new Int16Array(Math.ceil(block.length / this.step) + 2);
    let n = 0;
    for (const value of block) {
      this.sum += value;
      this.count += 1;
      this.at += 1;
      while (this.at >= this.until) {
        const mean = this.count ? Math.max(-1, Math.min(1, this.sum / this.count)) : this.last;
        out[n++] = mean < 0 ? mean * 0x8000 : mean * 0x7fff;
        this.last = mean;
        this.sum = 0;
        this.count = 0;
        this.until += this.step;
      }
    }
    if (n) this.chunks.push(out.subarray(0, n));
  }

  samples() {
    const all = new Int16Array(this.chunks.reduce((size, chunk) => size + chunk.length, 0));
    let at = 0;
    for (const chunk of this.chunks) {
      all.set(chunk, at);
      at += chunk.length;
    }
    return all;
  }
}

/** A WAV file of 16-bit mono `samples` at `rate`. */
export function wavBlob(samples, rate) {
  const header = new DataView(new ArrayBuffer(44));
  const text = (at, value) => [...value].forEach((c, i) => header.setUint8(at + i, c.charCodeAt(0)));
  text(0, "RIFF");
  header.setUint32(4, 36 + samples.byteLength, true);
  text(8, "WAVE");
  text(12, "fmt ");
  header.setUint32(16, 16, true); // the format chunk's size
  header.setUint16(20, 1, true); // PCM
  header.setUint16(22, 1, true); // mono
  header.setUint32(24, rate, true);
  header.setUint32(28, rate * 2, true); // bytes a second
  header.setUint16(32, 2, true); // bytes a frame
  header.setUint16(34, 16, true); // bits a sample
  text(36, "data");
  header.setUint32(40, samples.byteLength, true);
  return new Blob([header, samples], { type: "audio/wav" });
}
