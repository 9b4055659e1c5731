// Command benchplot draws the plots of `make bench-scale` from the CSVs it
// writes (scale-<N>.csv): clusters available over time, and the
// provisioner's management API requests per second, one line per N.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"image/color"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

type series struct {
	n    int
	rows [][]float64 // seconds, available, reads, writes, ...
}

func main() {
	in := flag.String("in", ".", "directory holding scale-<N>.csv")
	out := flag.String("out", ".", "directory to write the PNGs into")
	flag.Parse()
	files, err := filepath.Glob(filepath.Join(*in, "scale-*.csv"))
	if err != nil {
		log.Fatal(err)
	}
	if len(files) == 0 {
		log.Fatalf("no scale-*.csv in %s", *in)
	}
	var all []series
	for _, f := range files {
		if _, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "scale-"), ".csv")); err != nil {
			continue // not scale-<N>.csv
		}
		s, err := read(f)
		if err != nil {
			log.Fatalf("%s: %v", f, err)
		}
		all = append(all, s)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n < all[j].n })

	avail := plot.New()
	avail.Title.Text = "NestedClusters with all components available"
	avail.X.Label.Text = "seconds since the first create"
	avail.Y.Label.Text = "clusters"
	reqs := plot.New()
	reqs.Title.Text = "provisioner requests to the management apiserver"
	reqs.X.Label.Text = "seconds since the first create"
	reqs.Y.Label.Text = "requests per second"
	for i, s := range all {
		a := make(plotter.XYs, 0, len(s.rows))
		r := make(plotter.XYs, 0, len(s.rows))
		w := make(plotter.XYs, 0, len(s.rows))
		for j, row := range s.rows {
			a = append(a, plotter.XY{X: row[0], Y: row[1]})
			if j == 0 {
				continue
			}
			dt := row[0] - s.rows[j-1][0]
			if dt <= 0 {
				continue
			}
			r = append(r, plotter.XY{X: row[0], Y: (row[2] - s.rows[j-1][2]) / dt})
			w = append(w, plotter.XY{X: row[0], Y: (row[3] - s.rows[j-1][3]) / dt})
		}
		if err := addLine(avail, a, fmt.Sprintf("N=%d", s.n), i, false); err != nil {
			log.Fatal(err)
		}
		if err := addLine(reqs, w, fmt.Sprintf("N=%d writes", s.n), i, false); err != nil {
			log.Fatal(err)
		}
		if err := addLine(reqs, r, fmt.Sprintf("N=%d reads", s.n), i, true); err != nil {
			log.Fatal(err)
		}
	}
	avail.Legend.Top, avail.Legend.Left = true, true
	reqs.Legend.Top = true
	for name, p := range map[string]*plot.Plot{"scale-available.png": avail, "scale-requests.png": reqs} {
		if err := p.Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(*out, name)); err != nil {
			log.Fatal(err)
		}
		fmt.Println("wrote", filepath.Join(*out, name))
	}
}

func addLine(p *plot.Plot, xys plotter.XYs, label string, i int, dashed bool) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = fade(l.Color)
	}
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

func fade(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.RGBA{R: uint8(r >> 9), G: uint8(g >> 9), B: uint8(b >> 9), A: 255}
}

func read(path string) (series, error) {
	base := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "scale-"), ".csv")
	n, err := strconv.Atoi(base)
	if err != nil {
		return series{}, fmt.Errorf("name: want scale-<N>.csv")
	}
	f, err := os.Open(path)
	if err != nil {
		return series{}, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return series{}, err
	}
	s := series{n: n}
	for _, rec := range recs[1:] {
		row := make([]float64, len(rec))
		for i, v := range rec {
			if row[i], err = strconv.ParseFloat(v, 64); err != nil {
				return series{}, err
			}
		}
		s.rows = append(s.rows, row)
	}
	return s, nil
}
