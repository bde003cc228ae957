// MLToolImport: ONNX (protobuf-c) and Keras HDF5 (libhdf5) → MLToolCore Model.
