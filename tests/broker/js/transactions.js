// kafkajs against `kafkatx serve`: committed and aborted transactions, then
// consume-transform-produce in a read_committed group with offsets sent to each transaction.
// Usage: node transactions.js HOST:PORT  -> one JSON object on stdout.
'use strict'
const { Kafka, logLevel } = require('kafkajs')

const bootstrap = process.argv[2]
const kafka = new Kafka({
  clientId: 'kj',
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { initialRetryTime: 100, retries: 8 },
})

function timeout(ms) {
  return new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms))
}

async function produceSource() {
  const producer = kafka.producer({ transactionalId: 'kj-src', maxInFlightRequests: 1, idempotent: true })
  await producer.connect()
  const expected = []
  for (const [round, commit] of [[0, true], [1, false], [2, true]]) {
    const txn = await producer.transaction()
    const messages = []
    for (let i = 0; i < 6; i++) {
      const value = `${commit ? 'c' : 'a'}${round}-${i}`
      messages.push({ value, partition: i % 2 })
      if (commit) expected.push(value)
    }
    await txn.send({ topic: 'kj-in', messages })
    if (commit) await txn.commit()
    else await txn.abort()
  }
  await producer.disconnect()
  return expected
}

async function consumeTransformProduce(expected) {
  const consumer = kafka.consumer({ groupId: 'kj-group', sessionTimeout: 6000, heartbeatInterval: 500 })
  const producer = kafka.producer({ transactionalId: 'kj-ctp', maxInFlightRequests: 1, idempotent: true })
  await consumer.connect()
  await producer.connect()
  await consumer.subscribe({ topic: 'kj-in', fromBeginning: true })
  const received = []
  let transactions = 0
  const done = new Promise((resolve, reject) => {
    consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.messages.length === 0) return
        try {
          const txn = await producer.transaction()
          await txn.send({
            topic: 'kj-out',
            messages: batch.messages.map((m) => ({ value: m.value.toString().toUpperCase(), partition: batch.partition })),
          })
          for (const m of batch.messages) {
            received.push({ topic: batch.topic, partition: batch.partition, offset: Number(m.offset), value: m.value.toString() })
          }
          const next = (BigInt(batch.messages[batch.messages.length - 1].offset) + 1n).toString()
          await txn.sendOffsets({
            consumerGroupId: 'kj-group',
            topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }],
          })
          await txn.commit()
          transactions++
          if (received.length >= expected.length) resolve()
        } catch (e) {
          reject(e)
        }
      },
    })
  })
  await Promise.race([done, timeout(20000)])
  await consumer.disconnect()
  await producer.disconnect()
  const admin = kafka.admin()
  await admin.connect()
  const offsets = await admin.fetchOffsets({ groupId: 'kj-group', topics: ['kj-in'] })
  await admin.disconnect()
  const committed = {}
  for (const p of offsets[0].partitions) committed[p.partition] = Number(p.offset)
  return { received, transactions, committed }
}

async function main() {
  const expected = await produceSource()
  const result = await consumeTransformProduce(expected)
  process.stdout.write(JSON.stringify({ expected, ...result }) + '\n')
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`${e.stack || e}\n`)
  process.exit(1)
})
