// Package formtest holds the form schemas of the tests.
package formtest

// EveryKind is a form with a field of every kind the form model knows
// (string with lengths, email, URI, date, date-time, integer and number
// with bounds and a default, boolean, titled and untitled single choice,
// multiple choice), of which only name is required: for the fuzz targets
// of the form's parser and of its clients.
const EveryKind = `{"type":"object","properties":{
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
