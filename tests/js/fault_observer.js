#!/usr/bin/env node
// The control API from Node: inject faults over HTTP with the built-in fetch, meet them with kafkajs, and print one
// JSON line of what the client observed, so a test (tests/test_kafkajs.py) can compare it with what the broker saw.
//
//   node fault_observer.js CONTROL_URL BOOTSTRAP   (or MINIBROKER_CONTROL_URL and MINIBROKER_BOOTSTRAP)
//
// Two faults on Produce: TOPIC_AUTHORIZATION_FAILED once on one topic (kafkajs does not retry it: the send fails
// with the Kafka error type), and NOT_LEADER_OR_FOLLOWER twice for this program's client id (kafkajs refreshes its
// metadata and retries; the record lands once). Then a consumer group reads both topics and commits.
'use strict'

const { Kafka, Partitioners, logLevel } = require('kafkajs')

const CLIENT_ID = 'fault-observer'
const DENIED_TOPIC = 'js-denied'
const RETRIED_TOPIC = 'js-retried'
const GROUP = 'js-group'
const CONSUME_TIMEOUT_MS = 8000

const controlUrl = process.argv[2] || process.env.MINIBROKER_CONTROL_URL
const bootstrap = process.argv[3] || process.env.MINIBROKER_BOOTSTRAP
if (!controlUrl || !bootstrap) {
  console.error('usage: node fault_observer.js CONTROL_URL BOOTSTRAP')
  process.exit(2)
}

// kafkajs logs through this: warnings and errors go to stderr (for a failing test's output), and the retries of a
// send are counted from the producer's "Failed to send messages" entries.
const logged = []
const logCreator = () => ({ namespace, level, log }) => {
  logged.push({ namespace, level, message: log.message })
  if (level <= logLevel.WARN) console.error(`[kafkajs ${namespace}] ${log.message}`)
}

/** One control API call; a non-2xx answer is an error naming the broker's reason. */
async function control (method, path, body) {
  const answer = await fetch(controlUrl + path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const json = await answer.json()
  if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${json.error}`)
  return json
}

/** A producer send that fails: what kafkajs tells its caller. */
async function sendExpectingError (producer, record) {
  try {
    const sent = await producer.send(record)
    return { unexpected_success: sent }
  } catch (error) {
    return { name: error.name, type: error.type, code: error.code, retriable: error.retriable, message: error.message }
  }
}

/** Produce requests kafkajs sends while ``action`` runs (the first plus its retries). */
async function countProduceRequests (producer, action) {
  let requests = 0
  const stop = producer.on(producer.events.REQUEST, event => {
    if (event.payload.apiName === 'Produce') requests += 1
  })
  try {
    const result = await action()
    return { result, requests }
  } finally {
    stop()
  }
}

/** Read ``expected`` records of ``topics`` in GROUP from the start, commit after each, and return them. */
async function consumeInGroup (kafka, topics, expected) {
  const consumer = kafka.consumer({ groupId: GROUP, maxWaitTimeInMs: 100 })
  const records = []
  try {
    await consumer.connect()
    await consumer.subscribe({ topics, fromBeginning: true })
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`consumed ${records.length} of ${expected} records`)), CONSUME_TIMEOUT_MS)
      consumer.run({
        autoCommit: false,
        eachMessage: async ({ topic, partition, message }) => {
          records.push({ topic, partition, offset: Number(message.offset), value: message.value.toString() })
          await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }])
          if (records.length === expected) {
            clearTimeout(timer)
            resolve()
          }
        }
      }).catch(reject)
    })
  } finally {
    await consumer.disconnect()
  }
  return records
}

async function main () {
  const kafka = new Kafka({
    clientId: CLIENT_ID,
    brokers: bootstrap.split(','),
    logCreator,
    logLevel: logLevel.INFO,
    retry: { initialRetryTime: 50, retries: 5 }
  })
  const admin = kafka.admin()
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
  try {
    await admin.connect()
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic: DENIED_TOPIC }, { topic: RETRIED_TOPIC }] })
    await producer.connect()

    const denied = await control('POST', '/v1/faults',
      { api: 'Produce', topic: DENIED_TOPIC, error: 'TOPIC_AUTHORIZATION_FAILED', count: 1 })
    const deniedError = await sendExpectingError(producer, { topic: DENIED_TOPIC, messages: [{ value: 'denied' }] })
    const [accepted] = await producer.send({ topic: DENIED_TOPIC, messages: [{ value: 'accepted' }] })

    const retried = await control('POST', '/v1/faults',
      { api: 'Produce', client_id: CLIENT_ID, error: 'NOT_LEADER_OR_FOLLOWER', count: 2 })
    const retriesBefore = logged.filter(entry => entry.message.startsWith('Failed to send messages')).length
    const { result: [landed], requests } = await countProduceRequests(producer,
      () => producer.send({ topic: RETRIED_TOPIC, messages: [{ value: 'retried' }] }))
    const retriesLogged = logged.filter(entry => entry.message.startsWith('Failed to send messages')).length - retriesBefore

    const { faults } = await control('GET', '/v1/faults')
    const consumed = await consumeInGroup(kafka, [DENIED_TOPIC, RETRIED_TOPIC], 2)
    const offsets = await admin.fetchOffsets({ groupId: GROUP, topics: [DENIED_TOPIC, RETRIED_TOPIC] })

    console.log(JSON.stringify({
      non_retriable: { fault_id: denied.id, error: deniedError, then_accepted: { offset: Number(accepted.baseOffset) } },
      retriable: { fault_id: retried.id, produce_requests: requests, retries_logged: retriesLogged, offset: Number(landed.baseOffset), error_code: landed.errorCode },
      faults: faults.map(({ id, api, error, topic, client_id: clientId, hits, count }) => ({ id, api, error, topic, client_id: clientId, hits, count })),
      consumed,
      committed: offsets.flatMap(({ topic, partitions }) => partitions.map(({ partition, offset }) => ({ topic, partition, offset: Number(offset) })))
    }))
  } finally {
    await producer.disconnect()
    await admin.disconnect()
  }
}

main().catch(error => {
  console.error(error.stack || String(error))
  process.exit(1)
})
