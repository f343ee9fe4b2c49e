// Replaying a finished job from the store: the same events, the same apply(), with the gaps
// between them kept (at most MAX_GAP_S each) and divided by the speed; "instant" skips waiting.

const MAX_GAP_S = 2.0;

export class Replay {
  constructor({ apply, onProgress, onDone }) {
    this.apply = apply;
    this.onProgress = onProgress;
    this.onDone = onDone;
    this.speed = "instant";
    this.run = 0;
    this.wake = null;
  }

  setSpeed(speed) {
    this.speed = speed;
    this.wake?.();  // a long wait at the old speed ends now
  }

  stop() {
    this.run += 1;
    this.wake?.();
  }

  async play(events) {
    const run = ++this.run;
    for (let i = 0; i < events.length; i += 1) {
      if (run !== this.run) return false;
      if (i > 0 && this.speed !== "instant") {
        const gap = Math.min(Math.max((events[i].at || 0) - (events[i - 1].at || 0), 0), MAX_GAP_S);
        await this.sleep(Math.max(gap / Number(this.speed), 0.03) * 1000);
        if (run !== this.run) return false;
      }
      this.apply(events[i]);
      this.onProgress(i + 1, events.length);
    }
    this.onDone();
    return true;
  }

  sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() { clearTimeout(timer); resolve(); }
      this.wake = () => { this.wake = null; done(); };
    });
  }
}
