// Runs on the audio thread (an AudioWorklet): hands the page the microphone's first channel
// in blocks of about a tenth of a second (wav-recorder.js makes the WAV of them).

const BLOCK = 4096;

class Capture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.block = new Float32Array(BLOCK);
    this.filled = 0;
    this.port.onmessage = () => { // "flush": the rest, at the recording's end, marked so
      this.port.postMessage({ rest: this.block.slice(0, this.filled) });
      this.filled = 0;
    };
  }

  process(inputs) {
    const channel = inputs[0]?.[0];
    if (!channel) return true;
    let from = 0;
    while (from < channel.length) {
      const take = Math.min(channel.length - from, BLOCK - this.filled);
      this.block.set(channel.subarray(from, from + take), this.filled);
      this.filled += take;
      from += take;
      if (this.filled === BLOCK) {
        this.port.postMessage(this.block.slice());
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor("cadre-capture", Capture);
