// Runs the original face-api.js FaceExpressionNet (TF.js, its pure-JavaScript CPU backend) on the
// photos given as raw 112 x 112 RGB pixels, and prints its logits and probabilities as JSON.
// scripts/convert_face_expression.py copies this file next to the node_modules it installs.
//   node face_expression_oracle.cjs MODEL_DIR PIXELS.json
const fs = require('fs');
const tf = require('@tensorflow/tfjs');
const faceapi = require('@vladmandic/face-api/dist/face-api.node-wasm.js');

async function main() {
  const [modelDir, pixelsFile] = process.argv.slice(2);
  await faceapi.tf.setBackend('cpu');
  await faceapi.tf.ready();

  // The weights exactly as face-api.js loads them: TF.js decodes (and dequantises) the manifest.
  const manifest = JSON.parse(fs.readFileSync(`${modelDir}/face_expression_model-weights_manifest.json`, 'utf8'));
  const bin = fs.readFileSync(`${modelDir}/face_expression_model.bin`);
  const buffer = bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.byteLength);
  const weightMap = faceapi.tf.io.decodeWeights(buffer, manifest.flatMap((group) => group.weights));
  const net = new faceapi.FaceExpressionNet();
  net.loadFromWeightMap(weightMap);

  const photos = JSON.parse(fs.readFileSync(pixelsFile, 'utf8'));
  const t = faceapi.tf;
  const result = {
    backend: t.getBackend(), tfjs: t.version.tfjs, faceApi: faceapi.version,
    labels: faceapi.FACE_EXPRESSION_LABELS, photos: {},
  };
  for (const [name, pixels] of Object.entries(photos)) {
    const image = t.tensor3d(pixels, [112, 112, 3], 'int32');
    const input = await faceapi.toNetInput(image);
    const logits = net.runNet(input);
    const probabilities = t.softmax(logits);
    result.photos[name] = { logits: Array.from(logits.dataSync()), probabilities: Array.from(probabilities.dataSync()) };
    t.dispose([image, logits, probabilities]);
  }
  console.log(JSON.stringify(result));
}

main().catch((error) => { console.error(error); process.exit(1); });
