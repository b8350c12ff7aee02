// A live consumer on the reference Node client: `parallel` loops of receiveMessage(vt) on `qname`
// for `seconds` or until `most` messages were taken, each deleted at once when `ack` (else left in
// flight), then prints {"received": n}. Bounded in time and count.
"use strict";
const RSMQ = require("rsmq");

async function main() {
  const conn = JSON.parse(process.argv[2]);
  const { qname, seconds, parallel, vt, ack, most } = JSON.parse(process.argv[3]);
  const rsmq = new RSMQ(conn);
  rsmq.setMaxListeners(100);
  const end = Date.now() + seconds * 1000;
  let received = 0;
  await Promise.all([...Array(parallel)].map(async () => {
    while (Date.now() < end && received < most) {
      const msg = await rsmq.receiveMessageAsync({ qname, vt });
      if (!msg.id) continue;
      received++;
      if (ack) await rsmq.deleteMessageAsync({ qname, id: msg.id });
    }
  }));
  process.stdout.write(JSON.stringify({ received }) + "\n");
  rsmq.quit();
}

main().catch((err) => { console.error(err); process.exit(1); });
