// sluice compresses, after the worker's slot is freed.
module.exports = { compress: false };
