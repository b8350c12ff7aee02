// Drives the reference Node client (rsmq 0.12.4) for qconsole's tests.
//   node peer.js '{"host":"127.0.0.1","port":6379,"ns":"rsmq"}' '[["sendMessage",{"qname":"q","message":"x"}], ...]'
// runs each call in order and prints one JSON array: {"ok": result} or {"error": name} per call.
"use strict";
const RSMQ = require("rsmq");

async function main() {
  const conn = JSON.parse(process.argv[2]);
  const calls = JSON.parse(process.argv[3]);
  const rsmq = new RSMQ(conn);
  const out = [];
  for (const [method, args] of calls) {
    try {
      const res = method === "listQueues" ? await rsmq.listQueuesAsync() : await rsmq[method + "Async"](args);
      out.push({ ok: res });
    } catch (err) {
      out.push({ error: err.name || String(err), message: err.message });
    }
  }
  process.stdout.write(JSON.stringify(out) + "\n");
  rsmq.quit();
}

main().catch((err) => { console.error(err); process.exit(1); });
