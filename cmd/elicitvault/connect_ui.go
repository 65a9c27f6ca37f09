package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"
	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/client"
)

// terminalUI asks the user in the terminal: huh forms when stdin is a
// terminal, plain line prompts otherwise. It asks one question at a time.
type terminalUI struct {
	e   *env
	tty bool
	mu  sync.Mutex

	linesOnce sync.Once
	lines     chan string // line mode: stdin, line by line; closed at EOF
}

func newTerminalUI(e *env) *terminalUI {
	return &terminalUI{e: e, tty: isTerminal(e.stdin) && isTerminal(os.Stderr)}
}

var hostStyle = lipgloss.NewStyle().Bold(true).Underline(true)

// show makes a text of the server fit for the terminal: no escape
// sequence of the server's reaches it.
func show(s string) string { return client.Printable(s) }

// asker names who asks, as the server introduced itself.
func asker(server string) string {
	if server == "" {
		return "The server"
	}
	return "The server " + strconv.Quote(show(server)) // cleaned, then quoted: no escape nor invisible letter reaches the terminal
}

// reason is what a check says of a value, without the "elicit: content
// at /x" prefix.
func reason(err error) error {
	if err == nil {
		return nil
	}
	var ce *elicit.ContentError
	if errors.As(err, &ce) {
		return errors.New(ce.Reason)
	}
	return errors.New(client.Printable(err.Error()))
}

func (u *terminalUI) Form(ctx context.Context, f *client.FormRequest) (*client.Answer, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tty {
		return u.huhForm(ctx, f)
	}
	return u.lineForm(ctx, f)
}

func (u *terminalUI) ConsentURL(ctx context.Context, r *client.URLRequest) (elicit.Action, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tty {
		return u.huhURL(ctx, r)
	}
	return u.lineURL(ctx, r)
}

// open opens a link the user agreed to open; if no browser starts, the
// user has the link on screen and opens it by hand.
func (u *terminalUI) open(ctx context.Context, link string) error {
	if err := client.OpenBrowser(ctx, link); err != nil {
		fmt.Fprintf(u.e.stderr, "No browser could be started (%v): open the link above yourself.\n", err)
		return nil
	}
	fmt.Fprintf(u.e.stderr, "Opened in your browser. Waiting for the server…\n")
	return nil
}

// --- huh ---

func (u *terminalUI) run(ctx context.Context, groups ...*huh.Group) error {
	return huh.NewForm(groups...).WithInput(u.e.stdin).WithOutput(os.Stderr).WithShowHelp(true).RunWithContext(ctx)
}

// aborted reports whether err is the user's Ctrl-C (or the server giving
// up): the question is cancelled.
func aborted(err error) bool {
	return errors.Is(err, huh.ErrUserAborted) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, huh.ErrTimeout)
}

func (u *terminalUI) huhForm(ctx context.Context, f *client.FormRequest) (*client.Answer, error) {
	intro := show(f.Message)
	if f.Problem != nil {
		intro += "\n\nThe last answer was refused: " + reason(f.Problem).Error()
	}
	choice := "fill"
	err := u.run(ctx, huh.NewGroup(huh.NewSelect[string]().
		Title(asker(f.Server)+" asks:").Description(intro).
		Options(huh.NewOption("Fill in the form", "fill"), huh.NewOption("Decline", "decline")).
		Value(&choice)))
	if aborted(err) {
		return &client.Answer{Action: elicit.Cancel}, nil
	}
	if err != nil {
		return nil, err
	}
	if choice == "decline" {
		return &client.Answer{Action: elicit.Decline}, nil
	}

	var fields []huh.Field
	var collect []func(map[string]any)
	for i := range f.Fields {
		fd := &f.Fields[i]
		title := show(fd.Title)
		if fd.Required {
			title += " *"
		}
		desc := show(fd.Description)
		if h := fd.Hint(); h != "" {
			desc = strings.TrimSpace(desc + " (" + h + ")")
		}
		switch fd.Kind {
		case client.String, client.Number, client.Integer:
			s := show(defaultText(fd.Default))
			fields = append(fields, huh.NewInput().Title(title).Description(desc).Value(&s).Validate(func(v string) error {
				if strings.TrimSpace(v) == "" {
					if fd.Required {
						return errors.New("required")
					}
					return nil
				}
				_, err := fd.Parse(v)
				return reason(err)
			}))
			collect = append(collect, func(c map[string]any) {
				if v, err := fd.Parse(s); err == nil && v != nil {
					c[fd.Name] = v
				} else if err == nil && fd.Kind == client.String && fd.Default != nil {
					// The user cleared the default: send it cleared
					// if the field allows it, else leave it out.
					if v, err := fd.Check(""); err == nil {
						c[fd.Name] = v
					}
				}
			})
		case client.Boolean:
			if !fd.Required && fd.Default == nil {
				// Optional without a default: left out unless chosen.
				v := ""
				fields = append(fields, huh.NewSelect[string]().Title(title).Description(desc).
					Options(huh.NewOption("(none)", ""), huh.NewOption("Yes", "yes"), huh.NewOption("No", "no")).Value(&v))
				collect = append(collect, func(c map[string]any) {
					if v != "" {
						c[fd.Name] = v == "yes"
					}
				})
				continue
			}
			b, _ := fd.Default.(bool)
			fields = append(fields, huh.NewConfirm().Title(title).Description(desc).Affirmative("Yes").Negative("No").Value(&b))
			collect = append(collect, func(c map[string]any) { c[fd.Name] = b })
		case client.Enum:
			v, _ := fd.Default.(string)
			var opts []huh.Option[string]
			if !fd.Required {
				opts = append(opts, huh.NewOption("(none)", ""))
			}
			for _, o := range fd.Options {
				opts = append(opts, huh.NewOption(show(o.Title), o.Value))
			}
			fields = append(fields, huh.NewSelect[string]().Title(title).Description(desc).Options(opts...).Value(&v))
			collect = append(collect, func(c map[string]any) {
				if v != "" {
					c[fd.Name] = v
				}
			})
		case client.MultiSelect:
			vs, _ := fd.Default.([]string)
			vs = slices.Clone(vs)
			var opts []huh.Option[string]
			for _, o := range fd.Options {
				opts = append(opts, huh.NewOption(show(o.Title), o.Value))
			}
			ms := huh.NewMultiSelect[string]().Title(title).Description(desc).Options(opts...).Value(&vs).
				Validate(func(v []string) error {
					if len(v) == 0 && !fd.Required {
						return nil
					}
					_, err := fd.Check(v)
					return reason(err)
				})
			if fd.MaxItems != nil && *fd.MaxItems > 0 {
				ms = ms.Limit(*fd.MaxItems)
			}
			fields = append(fields, ms)
			collect = append(collect, func(c map[string]any) {
				if len(vs) > 0 || fd.Required {
					c[fd.Name] = vs
				} else if v, err := fd.Check([]string{}); err == nil {
					c[fd.Name] = v // nothing ticked is an answer: sent as []
				}
			})
		}
	}
	send := true
	fields = append(fields, huh.NewConfirm().Title("Send this answer to the server?").Affirmative("Send").Negative("Decline").Value(&send))
	for {
		err := u.run(ctx, huh.NewGroup(fields...).Title(show(f.Message)))
		if aborted(err) {
			return &client.Answer{Action: elicit.Cancel}, nil
		}
		if err != nil {
			return nil, err
		}
		if !send {
			return &client.Answer{Action: elicit.Decline}, nil
		}
		content := map[string]any{}
		for _, c := range collect {
			c(content)
		}
		if err := f.Check(content); err != nil {
			fmt.Fprintf(u.e.stderr, "Not sent: %v\n", show(err.Error()))
			continue
		}
		return &client.Answer{Action: elicit.Accept, Content: content}, nil
	}
}

func defaultText(v any) string {
	switch d := v.(type) {
	case string:
		return d
	case float64:
		return strconv.FormatFloat(d, 'g', -1, 64)
	}
	return ""
}

func (u *terminalUI) huhURL(ctx context.Context, r *client.URLRequest) (elicit.Action, error) {
	choice := "decline"
	desc := fmt.Sprintf("%s\n\n%s\n\nHost: %s", show(r.Message), r.URL, hostStyle.Render(r.Host))
	err := u.run(ctx, huh.NewGroup(huh.NewSelect[string]().
		Title(asker(r.Server)+" asks you to open a link in your browser:").Description(desc).
		Options(huh.NewOption("Decline", "decline"), huh.NewOption("Open "+r.Host+" in the browser", "open")).
		Value(&choice)))
	switch {
	case aborted(err):
		return elicit.Cancel, nil
	case err != nil:
		return "", err
	case choice == "open":
		fmt.Fprintf(u.e.stderr, "Opening %s\n", r.URL)
		return elicit.Accept, nil
	}
	return elicit.Decline, nil
}

// --- line prompts ---

// errEOF ends the questions: stdin is done.
var errEOF = errors.New("end of input")

func (u *terminalUI) readLine(ctx context.Context) (string, error) {
	u.linesOnce.Do(func() {
		u.lines = make(chan string)
		go func() {
			defer close(u.lines)
			sc := bufio.NewScanner(u.e.stdin)
			for sc.Scan() {
				u.lines <- sc.Text()
			}
		}()
	})
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case l, ok := <-u.lines:
		if !ok {
			return "", errEOF
		}
		return strings.TrimSpace(l), nil
	}
}

func (u *terminalUI) prompt(ctx context.Context, format string, args ...any) (string, error) {
	fmt.Fprintf(u.e.stderr, format, args...)
	return u.readLine(ctx)
}

func (u *terminalUI) lineForm(ctx context.Context, f *client.FormRequest) (*client.Answer, error) {
	w := u.e.stderr
	cancel := &client.Answer{Action: elicit.Cancel}
	fmt.Fprintf(w, "\n%s asks: %s\n", asker(f.Server), show(f.Message))
	if f.Problem != nil {
		fmt.Fprintf(w, "The last answer was refused: %v\n", reason(f.Problem))
	}
	for {
		l, err := u.prompt(ctx, "Fill in the form? [y]es, [d]ecline, [c]ancel: ")
		if err != nil {
			return cancel, nil
		}
		switch strings.ToLower(l) {
		case "y", "yes":
		case "d", "decline":
			return &client.Answer{Action: elicit.Decline}, nil
		case "c", "cancel":
			return cancel, nil
		default:
			continue
		}
		break
	}
	for {
		content := map[string]any{}
		for i := range f.Fields {
			fd := &f.Fields[i]
			v, err := u.lineField(ctx, fd)
			if err != nil {
				return cancel, nil
			}
			if v != nil {
				content[fd.Name] = v
			}
		}
		if err := f.Check(content); err != nil {
			fmt.Fprintf(w, "Not sent: %v. Again:\n", show(err.Error()))
			continue
		}
		for {
			l, err := u.prompt(ctx, "Send this answer? [y]es, [d]ecline, [c]ancel: ")
			if err != nil {
				return cancel, nil
			}
			switch strings.ToLower(l) {
			case "y", "yes":
				return &client.Answer{Action: elicit.Accept, Content: content}, nil
			case "d", "decline", "n", "no":
				return &client.Answer{Action: elicit.Decline}, nil
			case "c", "cancel":
				return cancel, nil
			}
		}
	}
}

// lineField asks one field until its value is valid; nil means left out.
func (u *terminalUI) lineField(ctx context.Context, fd *client.Field) (any, error) {
	w := u.e.stderr
	label := show(fd.Title)
	if fd.Required {
		label += " *"
	}
	if fd.Description != "" {
		fmt.Fprintf(w, "  %s\n", show(fd.Description))
	}
	for i, o := range fd.Options {
		fmt.Fprintf(w, "    %d) %s\n", i+1, show(o.Title))
	}
	var extra []string
	if h := fd.Hint(); h != "" {
		extra = append(extra, h)
	}
	if fd.Kind == client.MultiSelect {
		extra = append(extra, "comma-separated")
	}
	if fd.Default != nil {
		extra = append(extra, show(fmt.Sprintf("Enter for the default %v", fd.Default)))
		if !fd.Required {
			extra = append(extra, "- for none")
		}
	}
	hint := ""
	if len(extra) > 0 {
		hint = " (" + strings.Join(extra, "; ") + ")"
	}
	for {
		l, err := u.prompt(ctx, "%s%s: ", label, hint)
		if err != nil {
			return nil, err
		}
		if l == "" && fd.Default != nil {
			// Enter takes the default the prompt shows.
			if v, err := fd.Check(cloneDefault(fd.Default)); err == nil {
				return v, nil
			}
		}
		if l == "-" && fd.Default != nil && !fd.Required {
			// None, although there is a default: a multi-selection
			// with nothing chosen is sent as [] if allowed, anything
			// else is left out.
			if fd.Kind == client.MultiSelect {
				if v, err := fd.Check([]string{}); err == nil {
					return v, nil
				}
			}
			return nil, nil
		}
		if l == "" {
			if fd.Required {
				fmt.Fprintf(w, "  required\n")
				continue
			}
			return nil, nil
		}
		v, err := fd.Parse(l)
		if err != nil {
			fmt.Fprintf(w, "  %v\n", reason(err))
			continue
		}
		return v, nil
	}
}

func cloneDefault(v any) any {
	if l, ok := v.([]string); ok {
		return slices.Clone(l)
	}
	return v
}

func (u *terminalUI) lineURL(ctx context.Context, r *client.URLRequest) (elicit.Action, error) {
	w := u.e.stderr
	fmt.Fprintf(w, "\n%s asks you to open a link in your browser: %s\n  %s\n  Host: %s\n", asker(r.Server), show(r.Message), r.URL, r.Host)
	for {
		l, err := u.prompt(ctx, "Open it? [y]es, [n]o (decline), [c]ancel: ")
		if err != nil {
			return elicit.Cancel, nil
		}
		switch strings.ToLower(l) {
		case "y", "yes":
			return elicit.Accept, nil
		case "n", "no", "d", "decline":
			return elicit.Decline, nil
		case "c", "cancel":
			return elicit.Cancel, nil
		}
	}
}
