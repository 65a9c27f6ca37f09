package fronttest

// EveryFieldSchema is a form schema with every field kind of MCP's subset,
// for fuzz targets: text with bounds, each string format, an integer, a
// number with a default, a boolean, both spellings of a single choice and
// a multiple choice.
const EveryFieldSchema = `{"type":"object","properties":{
	"name":{"type":"string","minLength":1,"maxLength":20},
	"email":{"type":"string","format":"email"},
	"site":{"type":"string","format":"uri"},
	"born":{"type":"string","format":"date"},
	"at":{"type":"string","format":"date-time"},
	"age":{"type":"integer","minimum":0,"maximum":150},
	"score":{"type":"number","minimum":-1,"maximum":1,"default":0},
	"ok":{"type":"boolean"},
	"color":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},
	"size":{"type":"string","enum":["s","m"],"enumNames":["Small","Medium"]},
	"tags":{"type":"array","maxItems":3,"items":{"type":"string","enum":["a","b","c","d"]}}
},"required":["name"]}`
