/**
 * The subset of onnx.proto (official field numbers, proto2) that the graph builder writes.
 * Parsed at load time with protobufjs, so no generated code and no dependency on an old onnx package.
 */
import protobuf from 'protobufjs';

const ONNX_SUBSET = `
syntax = "proto2";
package onnx;
message StringStringEntryProto { optional string key = 1; optional string value = 2; }
message OperatorSetIdProto { optional string domain = 1; optional int64 version = 2; }
message TensorShapeProto {
  message Dimension { oneof value { int64 dim_value = 1; string dim_param = 2; } optional string denotation = 3; }
  repeated Dimension dim = 1;
}
message TypeProto {
  message Tensor { optional int32 elem_type = 1; optional TensorShapeProto shape = 2; }
  oneof value { Tensor tensor_type = 1; }
  optional string denotation = 6;
}
message ValueInfoProto { optional string name = 1; optional TypeProto type = 2; optional string doc_string = 3; }
message TensorProto {
  repeated int64 dims = 1;
  optional int32 data_type = 2;
  repeated float float_data = 4 [packed = true];
  repeated int32 int32_data = 5 [packed = true];
  repeated int64 int64_data = 7 [packed = true];
  optional string name = 8;
  optional bytes raw_data = 9;
  optional string doc_string = 12;
  repeated StringStringEntryProto external_data = 13;
  optional int32 data_location = 14;
}
message AttributeProto {
  optional string name = 1;
  optional float f = 2;
  optional int64 i = 3;
  optional bytes s = 4;
  optional TensorProto t = 5;
  optional GraphProto g = 6;
  repeated float floats = 7;
  repeated int64 ints = 8;
  repeated bytes strings = 9;
  optional int32 type = 20;
}
message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  optional string name = 3;
  optional string op_type = 4;
  repeated AttributeProto attribute = 5;
  optional string doc_string = 6;
  optional string domain = 7;
}
message GraphProto {
  repeated NodeProto node = 1;
  optional string name = 2;
  repeated TensorProto initializer = 5;
  optional string doc_string = 10;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
}
message ModelProto {
  optional int64 ir_version = 1;
  optional string producer_name = 2;
  optional string producer_version = 3;
  optional string domain = 4;
  optional int64 model_version = 5;
  optional string doc_string = 6;
  optional GraphProto graph = 7;
  repeated OperatorSetIdProto opset_import = 8;
  repeated StringStringEntryProto metadata_props = 14;
}
`;

const root = protobuf.parse(ONNX_SUBSET, { keepCase: true }).root;
export const ModelProto = root.lookupType('onnx.ModelProto');

/** onnx.TensorProto.DataType values used here. */
export const DataType = { FLOAT: 1, UINT8: 2, INT32: 6, INT64: 7, BOOL: 9 } as const;
export type DataTypeName = keyof typeof DataType;

/** onnx.AttributeProto.AttributeType values used here. */
export const AttributeType = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7 } as const;

export const IR_VERSION = 9;
export const OPSET = 21;
