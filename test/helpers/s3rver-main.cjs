// The tests' S3 server (s3rver, an independent implementation of the S3 API), run as its own
// process by test/helpers/s3-server.ts so a test can kill -9 it in the middle of an upload.
// Arguments: PORT DIRECTORY BUCKET. Prints "ready PORT" once it listens.
'use strict'
const S3rver = require('s3rver')

const [port, directory, bucket] = process.argv.slice(2)
new S3rver({ address: '127.0.0.1', port: Number(port), directory, silent: true, configureBuckets: [{ name: bucket }] })
  .run()
  .then(({ port: bound }) => process.stdout.write(`ready ${bound}\n`))
  .catch((err) => {
    process.stderr.write(`${err.stack ?? err}\n`)
    process.exit(1)
  })
