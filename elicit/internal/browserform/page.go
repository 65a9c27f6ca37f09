package browserform

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"

	schema "github.com/elicitvault/elicitvault/internal/form"

	"github.com/elicitvault/elicitvault/elicit/internal/page"
)

// pageScript polls the form's status and closes the page once it ended.
const pageScript = `(function(){var s=document.getElementById("status");if(!s)return;var u=s.getAttribute("data-url");
function poll(){fetch(u,{cache:"no-store"}).then(function(r){return r.ok?r.json():{state:"gone"}}).then(function(j){
if(j.state!=="pending"){document.body.textContent="This request has ended. You can close this page.";window.close();}else{setTimeout(poll,1500);}
}).catch(function(){setTimeout(poll,3000);});}setTimeout(poll,1500);})();`

// formPages is the policy of the form and its ended pages: the form posts
// to itself (page.SameOrigin) and polls its status with pageScript.
var formPages = page.New(page.SameOrigin, pageScript)

// pageTemplate is parsed when a page is first written, not when the
// program starts: a server that never shows one keeps no parse tree,
// which the GC would mark on every cycle.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{.Title}}</title><style>{{.Style}}</style></head><body>
{{if .Form}}
<h1>A tool is asking for your input</h1>
<p>Check that this code is the one your assistant shows: <span class="code" id="code">{{.Form.code}}</span></p>
<p id="message">{{.Form.message}}</p>
{{with index .Problems ""}}<p class="problem" id="problem">{{.}}</p>{{end}}
<form method="post" action="{{.Action}}" id="form">
<input type="hidden" name="_nonce" value="{{.Form.nonce}}">
{{range .Fields}}{{$f := .}}
{{if eq .Kind "boolean"}}
<label class="choice"><input type="checkbox" name="{{.Name}}" id="f-{{.Name}}" value="true"{{if .Checked}} checked{{end}}> {{.Title}}{{if .Description}} <span class="desc">{{.Description}}</span>{{end}}</label>
{{else if eq .Kind "multi"}}
<fieldset id="f-{{.Name}}"><legend>{{.Title}}{{if .Required}} *{{end}}</legend>{{if .Description}}<span class="desc">{{.Description}}</span>{{end}}
{{$n := .Name}}{{range .Options}}<label class="choice"><input type="checkbox" name="{{$n}}" value="{{.Value}}"{{if .Selected}} checked{{end}}> {{.Title}}</label>{{end}}
</fieldset>
{{else}}
<label for="f-{{.Name}}">{{.Title}}{{if .Required}} *{{end}}{{if .Description}} <span class="desc">{{.Description}}</span>{{end}}</label>
{{if eq .Kind "select"}}
<select name="{{.Name}}" id="f-{{.Name}}"{{if .Required}} required{{end}}><option value="">—</option>
{{range .Options}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Title}}</option>{{end}}</select>
{{else}}
<input type="{{.InputType}}" name="{{.Name}}" id="f-{{.Name}}" value="{{.Value}}"{{if .Required}} required{{end}}{{range $k, $v := .Attrs}} {{$k}}="{{$v}}"{{end}}>
{{end}}
{{end}}
{{with $f.Problem}}<p class="problem" id="problem-{{$f.Name}}">{{.}}</p>{{end}}
{{end}}
<div class="actions">
<button type="submit" name="_action" value="accept" id="accept">Submit</button>
<button type="submit" name="_action" value="decline" id="decline" class="secondary" formnovalidate>Decline</button>
<button type="submit" name="_action" value="cancel" id="cancel" class="secondary" formnovalidate>Cancel</button>
</div>
</form>
<p id="status" data-url="{{.StatusURL}}"></p>
<script>{{.Script}}</script>
{{else}}
<h1 id="ended">{{.Title}}</h1><p>{{.Body}}</p>
{{end}}
</body></html>`))
})

type pageData struct {
	Title, Body       string
	Style             template.CSS
	Script            template.JS
	Form              map[string]string
	Fields            []fieldView
	Problems          map[string]string
	Action, StatusURL string
}

type fieldView struct {
	Name, Title, Description string
	Kind, InputType, Value   string
	Required, Checked        bool
	Attrs                    map[string]string
	Options                  []optionView
	Problem                  string
}

type optionView struct {
	Value, Title string
	Selected     bool
}

// formPage renders f, filled with the posted values (or the schema's
// defaults) and the problems found in them.
func formPage(f *form, posted url.Values, problems map[string]string) pageData {
	d := pageData{
		Title:     "Your input is requested",
		Style:     template.CSS(page.Style),
		Script:    template.JS(pageScript),
		Form:      map[string]string{"code": f.code, "message": f.message, "nonce": f.nonce},
		Problems:  problems,
		Action:    "/f/" + f.id,
		StatusURL: "/f/" + f.id + "/status?n=" + f.nonce,
	}
	for i := range f.fields {
		fl := &f.fields[i]
		d.Fields = append(d.Fields, viewOf(fl, posted, problems[fl.Name]))
	}
	return d
}

func viewOf(f *schema.Field, posted url.Values, problem string) fieldView {
	title := f.Title
	if title == "" {
		title = f.Name
	}
	v := fieldView{Name: f.Name, Title: title, Description: f.Description, Required: f.Required, Problem: problem, Attrs: map[string]string{}}
	values := posted[f.Name]
	if posted == nil {
		values = defaultValues(f.Default)
	}
	first := ""
	if len(values) > 0 {
		first = values[0]
	}
	switch f.Kind {
	case schema.Boolean:
		v.Kind, v.Checked = "boolean", first == "true"
	case schema.MultiSelect, schema.Enum:
		v.Kind = "select"
		if f.Kind == schema.MultiSelect {
			v.Kind = "multi"
		}
		for _, o := range f.Options {
			title := o.Title
			if title == "" {
				title = o.Value
			}
			v.Options = append(v.Options, optionView{o.Value, title, slices.Contains(values, o.Value)})
		}
	case schema.Number, schema.Integer:
		v.Kind, v.InputType, v.Value = "input", "number", first
		v.Attrs["step"] = "any"
		if f.Kind == schema.Integer {
			v.Attrs["step"] = "1"
		}
		if f.Minimum != nil {
			v.Attrs["min"] = strconv.FormatFloat(*f.Minimum, 'g', -1, 64)
		}
		if f.Maximum != nil {
			v.Attrs["max"] = strconv.FormatFloat(*f.Maximum, 'g', -1, 64)
		}
	default:
		v.Kind, v.Value = "input", first
		switch f.Format {
		case "email":
			v.InputType = "email"
		case "uri":
			v.InputType = "url"
		case "date":
			v.InputType = "date"
		case "date-time":
			v.InputType = "text"
			v.Attrs["placeholder"] = "2026-01-31T09:30:00Z"
			v.Attrs["pattern"] = `\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+\-]\d{2}:\d{2})`
		default:
			v.InputType = "text"
		}
		if f.MinLength != nil {
			v.Attrs["minlength"] = strconv.Itoa(*f.MinLength)
		}
		if f.MaxLength != nil {
			v.Attrs["maxlength"] = strconv.Itoa(*f.MaxLength)
		}
	}
	return v
}

// defaultValues turns a field's default (string, float64, bool or
// []string) into form values.
func defaultValues(def any) []string {
	switch x := def.(type) {
	case nil:
		return nil
	case []string:
		return x
	case string:
		return []string{x}
	case bool:
		return []string{strconv.FormatBool(x)}
	case float64:
		return []string{strconv.FormatFloat(x, 'g', -1, 64)}
	}
	return nil
}

func endedPage(st formState) pageData {
	d := pageData{Style: template.CSS(page.Style), Script: template.JS(pageScript)}
	switch st {
	case stateAnswered:
		d.Title, d.Body = "Thank you", "Your answer was sent. You can close this page."
	case stateExpired:
		d.Title, d.Body = "This request expired", "Ask the assistant to try again. You can close this page."
	default:
		d.Title, d.Body = "This request has ended", "You can close this page."
	}
	return d
}

func writePage(w http.ResponseWriter, code int, d pageData) {
	formPages.Write(w, code, pageTemplate(), d)
}
