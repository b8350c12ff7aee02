// A load producer on the reference Node client: sends `count` messages "<prefix><i>" to `qname`,
// `delayEvery`-th one with a 1 s delay, then prints {"sent": n}. Bounded in count and time.
"use strict";
const RSMQ = require("rsmq");

async function main() {
  const conn = JSON.parse(process.argv[2]);
  const { qname, count, prefix, delayEvery } = JSON.parse(process.argv[3]);
  const rsmq = new RSMQ(conn);
  const deadline = Date.now() + 60000;
  let sent = 0;
  for (let i = 0; i < count && Date.now() < deadline; i++) {
    const opts = { qname, message: prefix + i };
    if (delayEvery && i % delayEvery === 0) opts.delay = 1;
    await rsmq.sendMessageAsync(opts);
    sent++;
  }
  process.stdout.write(JSON.stringify({ sent }) + "\n");
  rsmq.quit();
}

main().catch((err) => { console.error(err); process.exit(1); });
