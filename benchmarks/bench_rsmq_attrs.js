// rsmq's own count: getQueueAttributes (Node rsmq 0.12.4) of every queue, timed in-process.
//   node bench_rsmq_attrs.js '{"host":..,"port":..,"ns":..}' '["q0","q1"]' ROUNDS
// prints {"median_s": .., "msgs": .., "hiddenmsgs": ..} for one refresh (all queues, sequential)
"use strict";
const path = require("path");
const RSMQ = require(path.join(__dirname, "..", "tests", "node", "node_modules", "rsmq"));

async function main() {
  const conn = JSON.parse(process.argv[2]);
  const queues = JSON.parse(process.argv[3]);
  const rounds = parseInt(process.argv[4] || "5", 10);
  const rsmq = new RSMQ(conn);
  const times = [];
  let last = null;
  for (let r = 0; r < rounds + 1; r++) {
    const t0 = process.hrtime.bigint();
    let msgs = 0, hidden = 0;
    for (const q of queues) {
      const a = await rsmq.getQueueAttributesAsync({ qname: q });
      msgs += a.msgs; hidden += a.hiddenmsgs;
    }
    const dt = Number(process.hrtime.bigint() - t0) / 1e9;
    if (r > 0) times.push(dt);  // the first round warms the connection up
    last = { msgs, hidden };
  }
  times.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ median_s: times[Math.floor(times.length / 2)], msgs: last.msgs, hiddenmsgs: last.hidden }) + "\n");
  rsmq.quit();
}

main().catch((err) => { console.error(err); process.exit(1); });
